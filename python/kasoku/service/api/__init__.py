"""The HTTP side: the routes' dependencies (deps.py) and the routes, one module per resource (routes/)."""
