"""What goes out to Slack for a turn: the view, the answer, the stream, edited messages,
the status, the Stop control, task cards, blocks, tags and the delivery record."""
