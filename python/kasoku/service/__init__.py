"""kasoku as a service (docs/SERVING.md): the server (app.py: python -m kasoku serve; its settings config.py, logic
core.py and metrics.py, JSON bodies schemas.py, dependencies deps.py, routes routes/), its store (store.py), its
executors (backends.py; Ray: kasoku.distributed), the bodies both sides exchange (wire.py) and a server in a child
process (process.py: the example, the tests, the load run). The client is ks.Client (kasoku/client.py)."""
