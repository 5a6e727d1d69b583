"""The ack path: what Slack sends, answered within its 3 seconds. The events port and its
front door, HTTP and Socket Mode, the Bolt app and its listeners, classifying and
enqueueing messages; no turn work runs here."""
