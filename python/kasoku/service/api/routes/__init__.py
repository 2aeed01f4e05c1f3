"""The HTTP routes, one module per resource: system (health, metrics), clients, keys (parameters, key sets), jobs."""
