"""/healthz, /readyz and /metrics, and the readiness report behind /readyz."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import prometheus_client
import pytest
from aiohttp import web

from bot.config.errors import ConfigError
from bot.health.endpoints import HealthServer, add_routes
from bot.health.readiness import Readiness, redis_check, worker_check
from tests.fakes.redis_server import free_port


async def fine() -> str | None:
    return None


async def broken() -> str | None:
    return "no worker loop is running"


async def hangs() -> str | None:
    await asyncio.sleep(60)
    return None


async def raises() -> str | None:
    raise ConnectionError("refused")


async def test_report_names_each_failing_check() -> None:
    readiness = Readiness({"redis": fine, "worker": broken, "slow": hangs, "odd": raises}, 0.2)
    report = await readiness.report()
    assert not report.ready
    assert report.checks == {
        "redis": "ok",
        "worker": "no worker loop is running",
        "slow": "no answer within 0.2 s",
        "odd": "ConnectionError: refused",
    }
    assert report.as_json()["failing"] == [
        "worker: no worker loop is running",
        "slow: no answer within 0.2 s",
        "odd: ConnectionError: refused",
    ]
    assert (await Readiness({"redis": fine}).report()).ready


async def test_redis_and_worker_checks() -> None:
    async def ping() -> bool:
        raise ConnectionRefusedError

    assert await redis_check(ping)() == "unreachable (ConnectionRefusedError)"
    assert await redis_check(fine)() is None
    assert await worker_check(lambda: False)() == "no worker loop is running"
    assert await worker_check(lambda: True)() is None


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, dict[str, bool]]]:
    flags = {"redis_up": True}

    async def ping() -> bool:
        if not flags["redis_up"]:
            raise ConnectionError("down")
        return True

    server = HealthServer(Readiness({"redis": redis_check(ping)}), ping, "127.0.0.1", free_port())
    await server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", flags
    finally:
        await server.stop()


async def test_endpoints_on_their_own_port(served: tuple[str, dict[str, bool]]) -> None:
    base, flags = served
    counter = prometheus_client.Counter("slack_agent_test_endpoint_total", "a test metric")
    counter.inc(3)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 200
                assert (await response.json())["checks"] == {"redis": "ok"}
            flags["redis_up"] = False
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 503
                body = await response.json()
                assert body["failing"] == ["redis: unreachable (ConnectionError)"]
            async with session.get(f"{base}/healthz") as response:  # alive all the same
                assert response.status == 200
                down = {"ok": True, "redis": "unreachable (ConnectionError)"}
                assert await response.json() == down
            async with session.get(f"{base}/metrics") as response:
                assert response.status == 200
                assert response.content_type == "text/plain"
                assert "slack_agent_test_endpoint_total 3.0" in await response.text()
    finally:
        prometheus_client.REGISTRY.unregister(counter)


async def test_routes_join_an_existing_app() -> None:
    app = web.Application()
    add_routes(app, Readiness(), fine)
    paths = {route.resource.canonical for route in app.router.routes() if route.resource}
    assert {"/healthz", "/readyz", "/metrics"} <= paths
    public = web.Application()  # HTTP mode's events port
    add_routes(public, Readiness(), fine, metrics=False)
    paths = {route.resource.canonical for route in public.router.routes() if route.resource}
    assert paths == {"/healthz", "/readyz"}


async def test_a_port_in_use_is_a_clear_configuration_error(
    served: tuple[str, dict[str, bool]],
) -> None:
    taken = int(served[0].rsplit(":", 1)[1])
    second = HealthServer(Readiness(), fine, "127.0.0.1", taken)
    with pytest.raises(ConfigError, match=rf"cannot listen on 127.0.0.1:{taken} for /healthz"):
        await second.start()
