"""No secret is ever printed: real `slack-agent run`, `check` and `tools` processes with a
secret in every place one can be configured (Slack's tokens and signing secret, the model
key, a password in OPENAI_BASE_URL, Redis's requirepass, and ${ENV} values in an MCP
server's url query, args, command, cwd, headers and env), a stdio server that writes its
token on stderr, at DEBUG, in text and JSON; every line of stdout and stderr, and every
span exported, is searched for each secret's value."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.bot.observability.test_trace_processes import Collector
from tests.bot.process.test_run_command import healthy
from tests.cli_process import run_cli
from tests.fakes.llm_server import FakeLLM, calls, text
from tests.fakes.mcp_servers import HttpMcpServer
from tests.fakes.redis_server import PrivateRedis, free_port
from tests.fakes.slack_harness import app_environment, event_envelope, mention, signed_headers
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until

ROOT = Path(__file__).resolve().parents[3]
REDACTED = "[redacted]"
SECRETS = {
    "SLACK_BOT_TOKEN": "xoxb-999-printed-bot-token-q1",
    "SLACK_SIGNING_SECRET": "printed-signing-secret-q2",
    "OPENAI_API_KEY": "sk-printed-openai-key-q3",
    "MCP_KEY": "printed-mcp-url-key-q4",
    "MCP_TOKEN": "printed-mcp-arg-token-q5",
    "MCP_HEADER": "printed-mcp-header-q6",
    "MCP_ENV": "printed-mcp-env-q7",
}
LLM_PASSWORD = "printed-llm-password-q8"
REDIS_PASSWORD = "printed-redis-password-q9"


class Secrets:
    """The environment of every command, and every secret value in it."""

    def __init__(
        self, fake_slack: FakeSlack, fake_llm: FakeLLM, redis: PrivateRedis, tmp_path: Path
    ) -> None:
        workdir = tmp_path / "printed-mcp-dir-q10"
        workdir.mkdir()
        base_url = fake_llm.base_url.replace("http://", f"http://model-user:{LLM_PASSWORD}@")
        self.env = app_environment(fake_slack.api_url, base_url, redis.url, tmp_path / "agent.yaml")
        self.env.update(
            SECRETS,
            MCP_DIR=str(workdir),
            MCP_PYTHON=sys.executable,
            PYTHONPATH=str(ROOT),  # the stdio server runs in MCP_DIR
        )
        self.values = [*SECRETS.values(), LLM_PASSWORD, REDIS_PASSWORD, str(workdir)]
        self.values.append(sys.executable)

    def leaked(self, *outputs: str | bytes) -> list[str]:
        """The secrets found in any of ``outputs``."""
        found = []
        for value in self.values:
            for output in outputs:
                text = output.decode(errors="replace") if isinstance(output, bytes) else output
                if value in text:
                    found.append(value)
        return found


def stdio_server(**extra: Any) -> dict[str, Any]:
    return {
        "command": "${MCP_PYTHON}",
        "args": ["-m", "tests.fakes.mcp_server", "stdio", "--token=${MCP_TOKEN}"],
        "env": {"WAREHOUSE_TOKEN": "${MCP_ENV}"},
        "cwd": "${MCP_DIR}",
        "approval": "never",
        **extra,
    }


def write_config(path: Path, http_mcp: HttpMcpServer, **sections: Any) -> Path:
    config: dict[str, Any] = {
        "llm": {"model": "fake-model", "max_retries": 0},
        "slack": {"streaming": False},
        "mcp": {
            "servers": {
                "warehouse": stdio_server(prefix="wh_"),
                "remote": {
                    "url": http_mcp.url + "?api_key=${MCP_KEY}",
                    "headers": {"Authorization": "Bearer ${MCP_HEADER}"},
                    "prefix": "rm_",
                    "approval": "never",
                },
            }
        },
        **sections,
    }
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def redis_with_password() -> Iterator[PrivateRedis]:
    server = PrivateRedis(password=REDIS_PASSWORD)
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def secrets(
    fake_slack: FakeSlack, fake_llm: FakeLLM, redis_with_password: PrivateRedis, tmp_path: Path
) -> Secrets:
    return Secrets(fake_slack, fake_llm, redis_with_password, tmp_path)


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    made = Collector()
    await made.start()
    try:
        yield made
    finally:
        await made.stop()


@pytest.mark.parametrize(
    ("level", "log_format"), [("DEBUG", "text"), ("DEBUG", "json"), ("INFO", "text")]
)
async def test_run_prints_no_secret_and_exports_none(
    level: str,
    log_format: str,
    secrets: Secrets,
    fake_slack: FakeSlack,
    fake_llm: FakeLLM,
    http_mcp_server: HttpMcpServer,
    collector: Collector,
    tmp_path: Path,
) -> None:
    write_config(tmp_path / "agent.yaml", http_mcp_server)
    env = {**secrets.env, "LOG_FORMAT": log_format}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
    fake_llm.add(
        calls(("wh_whoami", {}, "c1"), ("rm_lookup_stock", {"item": "sugar"}, "c2")),
        text("Both answered."),
    )
    port = free_port()
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with out_path.open("w") as out, err_path.open("w") as err:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "--log-level",
            level,
            "run",
            "--port",
            str(port),
            env=env,
            stdout=out,
            stderr=err,
        )
    try:
        await healthy(port)
        assert await send_mention(port, "whoami and sugar?", "410.000001") == 200
        await until_answered(fake_slack, "410.000001")
    finally:
        process.send_signal(signal.SIGTERM)  # the span exporter flushes at exit
        assert await asyncio.wait_for(process.wait(), 30) == 0
    stdout, stderr = out_path.read_text(), err_path.read_text()

    # The tool's result held the env secret and the cwd: the model was sent them.
    [_, second] = fake_llm.requests
    assert SECRETS["MCP_ENV"] in json.dumps(second)
    assert secrets.leaked(stdout, stderr) == []
    assert secrets.leaked(*collector.bodies) == []
    assert {"execute_tool wh_whoami", "execute_tool rm_lookup_stock"} <= {
        span[1] for span in collector.spans
    }
    # The stdio server said its token on stderr, relayed to the log without it.
    assert "signing in with --token=[redacted]" in stderr
    if log_format == "json":
        lines = [json.loads(line) for line in stderr.splitlines()]  # still JSON, every line
        assert any(REDACTED in line["message"] for line in lines)
    if level == "DEBUG":
        # The HTTP clients' request lines: the model's URL without its credentials (they
        # leave the URL once they are its Basic authentication: bot/llm/transport.py),
        # the MCP server's without its query.
        assert f"HTTP Request: POST {fake_llm.base_url}/chat/completions" in stderr
        assert "model-user" not in stderr
        assert "/mcp?" + REDACTED in stderr
    else:
        # At INFO no HTTP client says which URL it asked (the answer above needed both).
        assert "HTTP Request" not in stderr and "/mcp?" not in stderr


async def send_mention(port: int, message: str, ts: str) -> int:
    body = json.dumps(event_envelope(mention(message, ts), f"Ev{ts}"))
    headers = signed_headers(body, secret=SECRETS["SLACK_SIGNING_SECRET"])
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers) as sent,
    ):
        return sent.status


async def until_answered(fake_slack: FakeSlack, ts: str) -> None:
    await until(lambda: "Both answered." in [m.text for m in fake_slack.thread("C0CHAN", ts)], 30)


# Each command's output, what it must say with its secrets redacted (one test each: every
# run starts the CLI and its MCP servers).
SAID_REDACTED = {
    "check": [
        # the model's URL without its password, the server's last words without the token
        f"llm: http://{REDACTED}@127.0.0.1",
        f"for --token={REDACTED}",
        "redis: reachable at 127.0.0.1",  # with Redis's password
    ],
    "check --json": [f"for --token={REDACTED}"],
    "tools": ["rm_lookup_stock", "MCP server broken is not connected", f"for --token={REDACTED}"],
    "tools --json": ['"name": "wh_whoami"', f"for --token={REDACTED}"],
}


@pytest.mark.parametrize("command", list(SAID_REDACTED))
async def test_check_and_tools_print_no_secret(
    command: str, secrets: Secrets, http_mcp_server: HttpMcpServer, tmp_path: Path
) -> None:
    # A second stdio server says its token on stderr and crashes with it in its last line
    # (its crash ends the wait for it: the generous timeout only covers a loaded machine).
    config = write_config(tmp_path / "agent.yaml", http_mcp_server)
    data = yaml.safe_load(config.read_text())
    data["mcp"]["servers"]["broken"] = stdio_server(
        prefix="br_", env={"WAREHOUSE_CRASH": "1"}, connect_timeout_s=30
    )
    config.write_text(yaml.safe_dump(data))
    code, out, err = await run_cli("--log-level", "DEBUG", *command.split(), env=secrets.env)
    assert code == 1, (out, err)  # the broken server
    assert secrets.leaked(out, err) == []
    if "--json" in command:
        json.loads(out)
    for said in SAID_REDACTED[command]:
        assert said in out + err, said


@pytest.mark.parametrize("command", ["check", "check --json", "tools"])
async def test_check_with_a_config_that_does_not_load_prints_no_secret(
    command: str, secrets: Secrets, http_mcp_server: HttpMcpServer, tmp_path: Path
) -> None:
    write_config(tmp_path / "agent.yaml", http_mcp_server, nonsense={"key": "${MCP_TOKEN}"})
    code, out, err = await run_cli("--log-level", "DEBUG", *command.split(), env=secrets.env)
    assert code in (1, 2), (out, err)
    assert "nonsense: unknown key" in out + err
    assert secrets.leaked(out, err) == []
