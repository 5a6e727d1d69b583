"""The turn: one message to answer, from the queue to the thread. Its model, states and
allowed moves, the owner that drives it, the fence every write and Slack call goes through,
what a settled turn writes, what it asks of its surface (``ports.py``), its Redis stores
(``store/``) and the worker that consumes the queue (``worker/``)."""
