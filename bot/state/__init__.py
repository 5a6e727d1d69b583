"""Everything kept in Redis, behind small typed APIs."""

from bot.state.errors import StateUnavailable
from bot.state.store import State, open_state

__all__ = ["State", "StateUnavailable", "open_state"]
