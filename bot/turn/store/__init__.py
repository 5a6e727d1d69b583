"""The turn's Redis stores: its record, the queue, the thread's lease, notices owed to
people, and stop requests."""
