"""Whether Redis keeps the bot's state across a restart: parsing CONFIG and INFO, real
servers with and without persistence, and what start-up does with the answer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bot.config.errors import ConfigError
from bot.process.state import State
from bot.state.redis.connection import RedisHandle, connect
from bot.state.redis.persistence import (
    LOST_ON_RESTART,
    Persistence,
    check_persistence,
    from_config,
    from_info,
    inspect,
)
from tests.fakes.redis_server import PrivateRedis


@pytest.mark.parametrize(
    ("appendonly", "save", "persists", "how"),
    [
        ("no", "", False, 'appendonly no and no RDB save points (save "")'),
        ("no", "  ", False, 'appendonly no and no RDB save points (save "")'),
        ("yes", "", True, "AOF (appendonly yes)"),
        ("no", "3600 1 300 100", True, "RDB snapshots only (save 3600 1 300 100)"),
        ("yes", "60 1000", True, "AOF (appendonly yes) and RDB snapshots (save 60 1000)"),
        ("YES", "", True, "AOF (appendonly yes)"),
    ],
)
def test_from_config(appendonly: str, save: str, persists: bool, how: str) -> None:
    assert from_config(appendonly, save) == Persistence(persists, how)


def test_from_info_aof_on_is_persistent() -> None:
    found = from_info({"aof_enabled": 1, "rdb_saves": 0})
    assert found.persists is True and "aof_enabled:1" in found.how


@pytest.mark.parametrize("info", [{"aof_enabled": 0, "rdb_saves": 3}, {"aof_enabled": "0"}, {}])
def test_from_info_without_aof_is_unknown(info: dict[str, Any]) -> None:
    found = from_info(info)
    assert found.persists is None
    assert "CONFIG is not allowed" in found.how


@pytest.fixture
def make_private_redis() -> Iterator[Callable[..., PrivateRedis]]:
    started: list[PrivateRedis] = []

    def make(**options: Any) -> PrivateRedis:
        server = PrivateRedis(**options)
        started.append(server)
        server.start()
        return server

    yield make
    for server in started:
        server.close()


async def test_the_shared_test_redis_does_not_persist(state: State) -> None:
    found = await inspect(state.client)
    assert found == Persistence(False, 'appendonly no and no RDB save points (save "")')


async def test_a_redis_with_appendonly_persists(
    make_state: Callable[..., State], make_private_redis: Callable[..., PrivateRedis]
) -> None:
    state = make_state(make_private_redis(appendonly=True).url)
    assert await inspect(state.client) == Persistence(True, "AOF (appendonly yes)")


async def test_without_config_info_shows_aof(
    make_state: Callable[..., State], make_private_redis: Callable[..., PrivateRedis]
) -> None:
    managed = make_state(make_private_redis(appendonly=True, config_command=False).url)
    found = await inspect(managed.client)
    assert found.persists is True and "INFO persistence" in found.how


async def test_without_config_and_without_aof_it_is_unknown(
    make_state: Callable[..., State], make_private_redis: Callable[..., PrivateRedis]
) -> None:
    managed = make_state(make_private_redis(config_command=False).url)
    found = await inspect(managed.client)
    assert found.persists is None
    assert "CONFIG is not allowed" in found.how and "rdb_saves:0" in found.how


async def test_a_redis_that_does_not_answer_is_unknown(
    make_state: Callable[..., State], private_redis: PrivateRedis
) -> None:
    state = make_state(private_redis.url)
    private_redis.stop()
    found = await inspect(state.client)
    assert found.persists is None and "did not answer" in found.how


# --- at start-up -----------------------------------------------------------------------


async def test_a_redis_without_persistence_gets_one_warning_naming_the_losses(
    state: State, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="bot.state.redis.persistence"):
        await check_persistence(state.handle, required=False)
    [warning] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    message = warning.getMessage()
    for loss in LOST_ON_RESTART:
        assert loss in message
    assert "follow-ups without a mention are no longer answered" in message
    assert "a Slack retry may be answered twice" in message
    assert "appendonly yes" in message


async def test_a_persistent_redis_gets_no_warning(
    make_state: Callable[..., State],
    make_private_redis: Callable[..., PrivateRedis],
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = make_state(make_private_redis(appendonly=True).url)
    with caplog.at_level(logging.INFO, logger="bot.state.redis.persistence"):
        found = await check_persistence(state.handle, required=True)
    assert found is not None and found.persists is True
    assert [r.levelno for r in caplog.records] == [logging.INFO]


async def test_required_persistence_refuses_a_redis_that_keeps_nothing(state: State) -> None:
    with pytest.raises(ConfigError, match=r"redis\.require_persistence is true") as refused:
        await check_persistence(state.handle, required=True)
    assert "keeps nothing on disk" in str(refused.value)
    assert "appendonly yes" in str(refused.value)


async def test_required_persistence_refuses_when_it_cannot_be_told(
    make_state: Callable[..., State], make_private_redis: Callable[..., PrivateRedis]
) -> None:
    managed = make_state(make_private_redis(config_command=False).url)
    with pytest.raises(ConfigError, match="could not be checked"):
        await check_persistence(managed.handle, required=True)


async def test_the_embedded_redis_is_not_warned_about_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handle: RedisHandle = connect(None)
    try:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="bot.state.redis.persistence"):
            assert await check_persistence(handle, required=False) is None
        assert caplog.records == []
        with pytest.raises(ConfigError, match="REDIS_URL is not set"):
            await check_persistence(handle, required=True)
    finally:
        await handle.aclose()
