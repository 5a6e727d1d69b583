"""Redis plumbing, and nothing else: the connection (single, Sentinel, Cluster), shards and
key names, the conversation a key belongs to, script batches, fenced commands,
persistence, and what a Redis failure looks like."""
