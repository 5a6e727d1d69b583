"""`slack-agent check`: the config, then every dependency, one plain line each."""
