"""kasoku as a service (docs/SERVING.md): the server (app.py, python -m kasoku serve), its store (store.py), its
executors (backends.py; Ray: kasoku.distributed) and the bodies both sides exchange (wire.py). The client is
ks.Client (kasoku/client.py)."""
