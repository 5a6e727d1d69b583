"""`run` and `worker` run on uvloop's event loop where it is installed, else on asyncio's."""

from __future__ import annotations

import asyncio
import sys

import pytest

from bot.process.event_loop import run_service


async def loop_kind() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_a_service_runs_on_uvloop() -> None:
    assert run_service(loop_kind()).startswith("uvloop")


def test_without_uvloop_a_service_runs_on_asyncios_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop: ImportError
    assert run_service(loop_kind()).startswith("asyncio")
