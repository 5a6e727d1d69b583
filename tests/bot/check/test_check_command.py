"""`slack-agent check` run as a person would: a real process, with the real redis, openai
and slack_sdk clients talking to a private Redis, the fake model server and fake Slack."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import redis

from bot.slack.manifest import bot_scopes, read_manifest
from tests.cli_process import run_cli
from tests.fakes.llm_server import FakeLLM
from tests.fakes.redis_server import PrivateRedis, free_port
from tests.fakes.slack_server import FakeSlack

SCOPES = bot_scopes(read_manifest())
GOOD_BOT = "xoxb-good"
GOOD_APP = "xapp-good"


def environment(fake_llm: FakeLLM, fake_slack: FakeSlack, redis_url: str) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "sk-check",
        "OPENAI_BASE_URL": fake_llm.base_url,
        "SLACK_BOT_TOKEN": GOOD_BOT,
        "SLACK_APP_TOKEN": GOOD_APP,
        "SLACK_API_URL": fake_slack.api_url,
        "REDIS_URL": redis_url,
    }


def config(tmp_path: Path, text: str = "llm: {model: fake-model}\n") -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    return path


async def check(*args: str, env: dict[str, str]) -> tuple[int, list[dict[str, Any]], str]:
    code, out, err = await run_cli("check", "--json", *args, env=env)
    report = json.loads(out)
    assert report["ok"] is (code == 0)
    return code, report["checks"], err


def lines(checks: list[dict[str, Any]], status: str) -> list[str]:
    return [f"{c['area']}: {c['detail']}" for c in checks if c["status"] == status]


def persistent_redis() -> PrivateRedis:
    server = PrivateRedis(appendonly=True)
    server.start()
    return server


async def test_everything_set_up_right_passes(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    fake_slack.granted_scopes = SCOPES | {"files:read"}
    server = persistent_redis()
    try:
        env = environment(fake_llm, fake_slack, server.url)
        code, checks, err = await check("--config", str(config(tmp_path)), env=env)
        assert code == 0, (checks, err)
        assert lines(checks, "fail") == [] and lines(checks, "warn") == []
        areas = {c["area"] for c in checks}
        assert {"config", "environment", "redis", "llm", "slack", "socket mode"} <= areas
        shown = "\n".join(lines(checks, "ok"))
        assert "Redis 7" in shown or "Redis 6" in shown or "Redis 8" in shown
        assert "persistence on: AOF" in shown
        assert "maxmemory-policy noeviction" in shown
        assert "model fake-model is listed" in shown
        assert f"every scope the manifest asks for ({len(SCOPES)})" in shown
        assert "apps.connections.open" in shown
        assert "Socket Mode (SLACK_APP_TOKEN is set)" in shown
        # The text form says the same, one line per check, and a summary.
        code, out, _ = await run_cli("check", "--config", str(config(tmp_path)), env=env)
        assert code == 0
        assert out.splitlines()[-1] == "all checks passed, 0 warning(s)"
        assert sum(line.startswith("[ok  ]") for line in out.splitlines()) == len(checks)
    finally:
        server.close()
    assert {c.method for c in fake_slack.calls} == {"auth.test", "apps.connections.open"}


async def test_every_problem_is_reported_in_one_run(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    """A refused bot token, an absent model and Redis down, all at once; exit 1."""
    fake_slack.refused_tokens = {GOOD_BOT: "invalid_auth", GOOD_APP: "invalid_auth"}
    fake_llm.models = ["gpt-4o", "llama3"]
    env = environment(fake_llm, fake_slack, f"redis://127.0.0.1:{free_port()}/0")
    code, checks, _ = await check("--config", str(config(tmp_path)), env=env)
    assert code == 1
    failed = "\n".join(lines(checks, "fail"))
    assert "redis: cannot reach Redis at 127.0.0.1:" in failed
    assert "llm: model fake-model (llm.model) is not listed; the server lists: gpt-4o, llama3" in (
        failed
    )
    assert "slack: auth.test: Slack refused the bot token: invalid_auth" in failed
    assert "socket mode: apps.connections.open: Slack refused the app token: invalid_auth" in (
        failed
    )
    assert len(lines(checks, "fail")) == 4


async def test_a_missing_scope_is_named(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    fake_slack.granted_scopes = SCOPES - {"chat:write", "users:read"}
    server = persistent_redis()
    try:
        code, checks, _ = await check(
            "--config",
            str(config(tmp_path)),
            env=environment(fake_llm, fake_slack, server.url),
        )
    finally:
        server.close()
    assert code == 1
    assert lines(checks, "fail") == [
        "slack: the bot token lacks scopes the manifest asks for: chat:write, users:read; add "
        "them (OAuth & Permissions, or update the app from manifest.yml) and reinstall the app"
    ]


async def test_a_redis_that_keeps_nothing_or_evicts_is_a_warning(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path, private_redis: PrivateRedis
) -> None:
    fake_slack.granted_scopes = SCOPES
    redis.Redis(port=private_redis.port).config_set("maxmemory-policy", "allkeys-lru")
    env = environment(fake_llm, fake_slack, private_redis.url)
    code, checks, _ = await check("--config", str(config(tmp_path)), env=env)
    assert code == 0  # warnings hold
    warned = lines(checks, "warn")
    assert len(warned) == 2
    assert warned[0].startswith("redis: persistence off (appendonly no and no RDB save points")
    assert "a Redis restart loses queued and running turns" in warned[0]
    assert warned[1].startswith(
        "redis: maxmemory-policy allkeys-lru evicts keys once a maxmemory limit is set"
    )
    # With redis.require_persistence the same Redis is a problem.
    strict = config(tmp_path, "llm: {model: fake-model}\nredis: {require_persistence: true}\n")
    code, checks, _ = await check("--config", str(strict), env=env)
    assert code == 1
    assert lines(checks, "fail")[0].endswith("(redis.require_persistence is true)")


async def test_missing_settings_and_a_bad_config_are_all_named(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    bad = config(tmp_path, "llm: {modle: fake-model}\n")
    code, checks, _ = await check("--config", str(bad), env={})
    assert code == 1
    failed = lines(checks, "fail")
    assert failed[0].startswith("config: ") and "llm.modle" in failed[0]
    assert [line.split(" is not set")[0] for line in failed[1:]] == [
        "environment: OPENAI_API_KEY",
        "environment: SLACK_BOT_TOKEN",
        "environment: SLACK_SIGNING_SECRET",
    ]
    assert "REDIS_URL is not set: the bot would use an embedded in-process Redis" in "\n".join(
        lines(checks, "warn")
    )
    assert lines(checks, "skip") == [
        "llm: not checked: the config did not load",
        "slack: not checked: SLACK_BOT_TOKEN is not set",
    ]


async def test_run_names_every_missing_setting_in_one_message(tmp_path: Path) -> None:
    code, _, err = await run_cli("run", "--config", str(config(tmp_path)), env={}, limit_s=30)
    assert code == 2
    assert "3 required settings are missing:" in err
    for name in ("OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"):
        assert f"  {name} is not set: " in err
    # Socket Mode needs no signing secret; a worker needs no Slack request secret either.
    code, _, err = await run_cli(
        "worker", "--config", str(config(tmp_path)), env={"OPENAI_API_KEY": "k"}, limit_s=30
    )
    assert code == 2
    assert "1 required setting is missing:\n  SLACK_BOT_TOKEN is not set" in err


async def test_a_server_without_models_and_mcp_servers(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    fake_llm.models = None  # some OpenAI-compatible servers have no /models
    fake_slack.granted_scopes = SCOPES
    text = f"""llm: {{model: fake-model}}
mcp:
  servers:
    warehouse:
      command: {sys.executable}
      args: ["-m", "tests.fakes.mcp_server", "stdio"]
    broken:
      command: /nonexistent/mcp-server
      connect_timeout_s: 2
"""
    server = persistent_redis()
    try:
        env = environment(fake_llm, fake_slack, server.url)
        code, checks, _ = await check("--config", str(config(tmp_path, text)), env=env)
    finally:
        server.close()
    assert code == 1
    warned = "\n".join(lines(checks, "warn"))
    assert f"llm: {fake_llm.base_url} has no /models endpoint, so model fake-model" in warned
    mcp = {c["area"]: c for c in checks if c["area"].startswith("mcp ")}
    assert mcp["mcp warehouse"]["status"] == "ok"
    assert re.match(r"connected, \d+ tools listed: add_tool, ", mcp["mcp warehouse"]["detail"])
    assert mcp["mcp broken"]["status"] == "fail"
    assert mcp["mcp broken"]["detail"].endswith("its tools are not listed")


async def test_a_role_pattern_that_matches_no_tool_is_a_warning_not_a_failure(
    fake_llm: FakeLLM, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    """A deny pattern for a tool the bot does not have (README's `!search_payroll`) denies
    nothing: `check` warns, the config is valid and the exit code is 0. Patterns naming an
    MCP server's tools are looked at once the server has listed them. So are a channel
    entry's tool globs; its server names are looked up among the configured servers."""
    fake_slack.granted_scopes = SCOPES | {"files:read"}
    text = f"""llm: {{model: fake-model}}
mcp:
  servers:
    warehouse:
      command: {sys.executable}
      args: ["-m", "tests.fakes.mcp_server", "stdio"]
      prefix: wh_
roles:
  staff:
    members: [S0WAREHOUSE]
    tools: ["wh_lookup_stock", "search_*", "!search_payroll"]
  member: {{default: true, tools: [get_time]}}
channels:
  C0SUPPORT: {{tools: ["wh_*", "zendesk_*"], mcp_servers: [warehouse, zendesk]}}
"""
    server = persistent_redis()
    try:
        env = environment(fake_llm, fake_slack, server.url)
        code, checks, err = await check("--config", str(config(tmp_path, text)), env=env)
    finally:
        server.close()
    assert code == 0, (checks, err)
    assert lines(checks, "fail") == []
    assert any(c["area"] == "config" and c["status"] == "ok" for c in checks)
    warned = [line for line in lines(checks, "warn") if line.startswith("roles: ")]
    assert [w.split(" (tools: ")[0] for w in warned] == [
        "roles: roles.staff.tools[1]: 'search_*' matches no tool",
        "roles: roles.staff.tools[2]: '!search_payroll' matches no tool",
    ]
    assert warned[1].endswith("; it denies nothing") and "wh_lookup_stock" in warned[1]
    channels = [line for line in lines(checks, "warn") if line.startswith("channels: ")]
    assert [w.split(" (")[0] for w in channels] == [
        "channels: channels.C0SUPPORT.tools[1]: 'zendesk_*' matches no tool",
        "channels: channels.C0SUPPORT.mcp_servers[1]: 'zendesk' is no configured MCP server",
    ]
