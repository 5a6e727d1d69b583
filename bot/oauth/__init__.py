"""People's connections to remote MCP servers (per-person OAuth sign-in): config, the sealed
records in Redis, the sign-in flow's web routes."""
