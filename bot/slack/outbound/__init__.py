"""What a turn writes to Slack (in the worker): the view, the answer, the stream, edited
messages, the status, the Stop control, the approval cards and questions, tags and the
delivery record."""
