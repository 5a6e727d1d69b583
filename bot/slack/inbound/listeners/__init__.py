"""Bolt listeners, grouped by kind; each module has a ``register(app, ...)``."""
