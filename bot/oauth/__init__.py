"""People's connections to MCP servers that sign each person in (OAuth): the ``oauth:``
config (``config.py``); each person's token with what refreshing it needs, kept in Redis,
sealed, and refreshed once across replicas (``records.py``), and each server's client
registration; AES-GCM with the bot's secret key (``crypto.py``). What reaches Redis in plain
is only what lists and schedules a connection (its server, issuer, scope, since when, when it
expires), never a token or a secret."""
