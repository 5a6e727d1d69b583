"""A benchmark's keys on the shared Redis: removed when it ends."""

from __future__ import annotations

from bot.config.schema import AppConfig
from bot.process.state import open_state


async def delete_prefix(redis_url: str, prefix: str) -> None:
    """Delete every key under ``prefix``."""
    state = open_state(redis_url, AppConfig.model_validate({"redis": {"key_prefix": prefix}}))
    try:
        keys = [key async for key in state.client.scan_iter(match=f"{prefix}*")]
        if keys:
            await state.client.delete(*keys)
    finally:
        await state.aclose()
