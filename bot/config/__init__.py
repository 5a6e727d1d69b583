"""Configuration: the YAML file (roles, tools, LLM settings) and the environment (secrets).

Import from the modules (``bot.config.errors``, ``.schema``, ``.loading``, ``.environment``):
the package itself imports nothing, so what needs only :class:`ConfigError` (the command
line, before a worker process holds on to its supervisor's lifeline: bot/process/
lifeline.py) does not load the schema and pydantic."""
