"""``slack-agent`` run as a person would, stopping at start-up with the setting it lacks named
(exit 2) before it reaches anything."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.cli_process import run_cli
from tests.fakes.redis_server import free_port


@pytest.mark.parametrize(
    "arguments", [["run"], ["worker", "--processes", "0"], ["chat"]], ids=lambda a: a[0]
)
async def test_run_stops_naming_the_secret_key(arguments: list[str], tmp_path: Path) -> None:
    reached: list[str] = []

    async def note(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append("connection")
        writer.close()

    # The MCP server and Redis both point here: a command that stops first reaches neither.
    listener = await asyncio.start_server(note, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    config = tmp_path / "agent.yaml"
    config.write_text(
        "oauth: {redirect_base_url: 'https://bot.example.com'}\n"
        f"mcp: {{servers: {{linear: {{url: 'http://127.0.0.1:{port}/mcp', auth: oauth}}}}}}\n"
    )
    env = {
        "OPENAI_API_KEY": "sk-test",
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": f"http://127.0.0.1:{port}/api/",
        "REDIS_URL": f"redis://127.0.0.1:{port}/0",
    }
    extra = ["--port", str(free_port())] if arguments[0] == "run" else []
    try:
        code, out, err = await run_cli(
            *arguments, "--config", str(config), *extra, env=env, limit_s=30
        )
    finally:
        listener.close()
        await listener.wait_closed()
    assert code == 2, err
    assert (
        "slack-agent: configuration error\n1 required setting is missing:\n"
        "  SLACK_AGENT_SECRET_KEY is not set: mcp.servers.linear has auth: oauth: people's "
        "tokens are stored encrypted with it (base64 of 32 random bytes: openssl rand "
        "-base64 32)"
    ) in err
    assert "Traceback" not in err and out == ""
    assert reached == []
