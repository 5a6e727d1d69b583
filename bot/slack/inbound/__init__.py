"""What comes in from Slack: the Bolt app and its listeners, classifying and enqueueing
messages, HTTP and Socket Mode, and the inbox that reads a message whole for the model."""
