"""The worker: reads the queue, leases threads, runs each turn's owner."""
