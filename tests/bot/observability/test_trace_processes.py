"""One turn's trace across two real processes: `slack-agent run --no-worker` (ingress,
tracing switched on by OTEL_EXPORTER_OTLP_ENDPOINT) and `slack-agent worker` (switched on by
telemetry.otlp_endpoint), both exporting over OTLP/HTTP to a fake collector on loopback."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from bot.process.state import State
from tests.bot.process.test_run_command import environment, healthy, send_mention, spawn
from tests.fakes.llm_server import FakeLLM, calls, text
from tests.fakes.redis_server import free_port
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until

Span = tuple[str, str, bytes, bytes, bytes]  # service, name, trace id, span id, parent id


class Collector:
    """An OTLP/HTTP traces endpoint that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.bodies: list[bytes] = []  # each export request as it came
        self.port = free_port()
        self.runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/traces", self.export)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def export(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.bodies.append(body)
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        for resource_spans in message.resource_spans:
            service = next(
                a.value.string_value
                for a in resource_spans.resource.attributes
                if a.key == "service.name"
            )
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        (service, span.name, span.trace_id, span.span_id, span.parent_span_id)
                    )
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.fixture
async def processes() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    started: list[asyncio.subprocess.Process] = []
    yield started
    for process in started:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    made = Collector()
    await made.start()
    try:
        yield made
    finally:
        await made.stop()


async def test_a_turn_is_one_trace_across_the_ingress_and_worker_processes(
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    tmp_path: Path,
    key_prefix: str,
    collector: Collector,
    processes: list[asyncio.subprocess.Process],
    state: State,
) -> None:
    ingress_config = tmp_path / "ingress.yaml"
    ingress_config.write_text(f"redis: {{key_prefix: '{key_prefix}'}}\n")
    worker_config = tmp_path / "worker.yaml"
    worker_config.write_text(
        f"redis: {{key_prefix: '{key_prefix}'}}\n"
        f"telemetry: {{otlp_endpoint: '{collector.url}', service_name: agent-worker}}\n"
    )
    ingress_env = environment(fake_slack, fake_llm, ingress_config)
    ingress_env.update(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_SERVICE_NAME="ingress")
    worker_env = environment(fake_slack, fake_llm, worker_config)
    fake_llm.add(calls(("calculate", {"expression": "2+2"}, "c1")), text("It is 4."))

    port = free_port()
    ingress = await spawn(processes, ingress_env, "run", "--port", str(port), "--no-worker")
    await healthy(port)
    assert await send_mention(port, "what is 2+2?", "150.000001") == 200
    worker = await spawn(processes, worker_env, "worker")
    await until(
        lambda: [m.text for m in fake_slack.thread("C0CHAN", "150.000001")] == ["It is 4."], 30
    )
    for process in (ingress, worker):
        process.send_signal(signal.SIGTERM)  # the exporters flush at exit
        assert await asyncio.wait_for(process.wait(), 30) == 0

    [accept] = [s for s in collector.spans if s[1] == "slack_agent.accept"]
    [turn] = [s for s in collector.spans if s[1] == "slack_agent.turn"]
    assert accept[0] == "ingress" and turn[0] == "agent-worker"
    assert accept[4] == b""  # the root
    assert turn[2] == accept[2] and turn[4] == accept[3]  # same trace, child of the ingress
    below_turn = {s[1] for s in collector.spans if s[4] == turn[3]}
    assert {"chat gpt-4o-mini", "execute_tool calculate", "slack.deliver"} <= below_turn
