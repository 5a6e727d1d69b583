"""Everything kept in Redis, behind small typed APIs (the turn's own stores live in
``bot/turn/store``; the process builds them all on one client in ``bot/process/state.py``)."""

from bot.state.redis.errors import StateUnavailable

__all__ = ["StateUnavailable"]
