"""Per-conversation message history, behind one small protocol with pluggable backends."""

from bot.history.store import HistoryStore, ThreadKey

__all__ = ["HistoryStore", "ThreadKey"]
