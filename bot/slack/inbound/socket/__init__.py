"""Socket Mode in production: several connections, refreshed without a gap, failures that
stop start-up or show in readiness."""
