"""Each channel its own agent: the ``channels:`` section of the config, which of its entries
and which values set in Slack are in force in a channel (pure), what a turn reads of its
channel in one round trip, and the channel's part of the system prompt. The records (values
set in Slack, memories' notes) live in ``bot/state/channel_settings.py`` and
``bot/state/channel_memory.py``."""
