"""The HTTP routes, one module per resource: system (health, metrics), clients, keys (parameters, key sets), jobs,
models (kasoku.nn plans), multiparty (sessions and their key shares)."""
