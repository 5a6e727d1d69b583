"""The turn: one message to answer, from the queue to the thread. Its model, states and
allowed moves, the owner that drives it, what a settled turn writes, its Redis stores
(``store/``) and the worker that consumes the queue (``worker/``)."""
