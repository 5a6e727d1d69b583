"""Text for Slack: splitting long answers, cleaning incoming text."""
