from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.slack_server import FakeSlack
from tests.fakes.socket_mode import FakeSocketMode


@pytest.fixture
async def fake_socket(fake_slack: FakeSlack) -> AsyncIterator[FakeSocketMode]:
    server = FakeSocketMode(fake_slack)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
