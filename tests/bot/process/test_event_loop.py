"""``run`` and ``worker`` serve on uvloop unless SLACK_AGENT_EVENT_LOOP says asyncio; any
other value is refused at start, naming the variable."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from bot.config import ConfigError
from bot.process.event_loop import loop_factory, serve
from tests.cli_process import run_cli


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_by_default_and_asyncio_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_AGENT_EVENT_LOOP", raising=False)
    assert loop_factory() is uvloop.new_event_loop
    assert serve(loop_module()).startswith("uvloop")
    for choice in ("asyncio", " AsyncIO "):
        monkeypatch.setenv("SLACK_AGENT_EVENT_LOOP", choice)
        assert loop_factory() is None
        assert serve(loop_module()).startswith("asyncio")
    monkeypatch.setenv("SLACK_AGENT_EVENT_LOOP", "uvloop")
    assert serve(loop_module()).startswith("uvloop")


def test_another_loop_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_AGENT_EVENT_LOOP", "trio")
    with pytest.raises(ConfigError, match="SLACK_AGENT_EVENT_LOOP: 'trio' is neither"):
        serve(loop_module())  # the coroutine is closed, not left un-awaited


async def test_the_cli_stops_at_start_with_exit_2() -> None:
    env = {"SLACK_AGENT_EVENT_LOOP": "trio", "SLACK_API_URL": "http://127.0.0.1:9/api/"}
    for arguments in (["run"], ["worker"]):
        code, _, err = await run_cli(*arguments, env=env, limit_s=30)
        assert code == 2, err
        assert "SLACK_AGENT_EVENT_LOOP: 'trio' is neither uvloop nor asyncio" in err
