"""Per-conversation message history, behind one small protocol with pluggable backends."""

from bot.history.store import HistoryStore, InMemoryHistory, ThreadKey

__all__ = ["HistoryStore", "InMemoryHistory", "ThreadKey"]
