"""Records shared across threads, behind small typed APIs: the audit log, usage, feedback,
tool switches, role grants, the role cache, channels' settings set in Slack and their
memories' notes. Redis plumbing is in ``redis/``; what is keyed by a thread or a turn is in
``bot/turn/store/``."""
