"""Every Redis record keyed by a thread or a turn: the turn's record and journal, the
queue, the thread's lease, its history, asides, participation and agent pane, approvals
and questions, notices owed to people, and stop requests."""
