"""Admin switches: a tool turned off (or back on), by whom and when. Read on every model
call, so a switch takes effect on every replica at once."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from bot.state.redis.connection import Redis
from bot.state.redis.keys import Keys


@dataclass(frozen=True)
class Switch:
    tool: str
    enabled: bool
    by: str
    at: float


class ToolSwitches:
    def __init__(self, client: Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    async def turn(self, tool: str, enabled: bool, by: str) -> Switch:
        switch = Switch(tool, enabled, by, time.time())
        await self.client.hset(self.keys.switches, tool, json.dumps(asdict(switch)))
        return switch

    async def all(self) -> dict[str, Switch]:
        return parse(await self.client.hgetall(self.keys.switches))

    async def disabled(self) -> set[str]:
        return switched_off(await self.client.hgetall(self.keys.switches))

    async def is_enabled(self, tool: str) -> bool:
        """Tools are on unless an admin switched them off."""
        raw = await self.client.hget(self.keys.switches, tool)
        return raw is None or bool(json.loads(raw)["enabled"])


def parse(raw: dict[str, str]) -> dict[str, Switch]:
    """The switches hash as read (tool name: its last switch, as JSON)."""
    return {tool: Switch(**json.loads(value)) for tool, value in raw.items()}


def switched_off(raw: dict[str, str]) -> set[str]:
    """The tools the switches hash ``raw`` has off."""
    return {tool for tool, switch in parse(raw).items() if not switch.enabled}
