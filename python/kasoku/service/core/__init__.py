"""The service apart from HTTP: its settings (config.py), its logic (service.py) and its counters (metrics.py)."""
