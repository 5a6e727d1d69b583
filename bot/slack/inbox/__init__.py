"""What a turn reads from Slack (in the worker): people's messages as the model reads them,
their files and forwards, the thread the bot joins, the replies it only listened to, and
what the surface tells the model."""
