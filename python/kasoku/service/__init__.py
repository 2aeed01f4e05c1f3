"""kasoku as a service (docs/SERVING.md): the server (app.py: python -m kasoku serve; its settings config.py, logic
core.py and metrics.py, JSON bodies schemas.py, dependencies deps.py, routes routes/), its store (store.py), its
executors (executors.py; Ray: ray_executor.py), the bodies both sides exchange (wire.py), the client (client.py:
ks.Client) and a server in a child process (process.py: the example, the tests, the load run).

The service is the third floor of the package: it may import the library (kasoku, its errors, sched, multiparty) and
kasoku.nn, and nothing below imports it (ks.Client is a lazy attribute); the command line (kasoku.cli) sits above it."""
