"""``slack-agent chat --channel C…`` (a real process on the real Redis): the console's turns
in that channel's settings, from the file and from Slack: its instructions and notes, its
tools narrowed, remember (and the line saying what was saved), its budget."""

from __future__ import annotations

import json
from pathlib import Path

from bot.process.state import State
from tests.cli_process import run_cli
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results

CONFIG = """
system_prompt: "You are the ACME assistant."
llm: {{model: fake-model, max_retries: 0}}
redis: {{key_prefix: '{prefix}'}}
channels:
  C0SUPPORT:
    instructions: "You answer customer-support questions."
    tools: ["get_time", "calculate"]
    memory: true
  C0SMALL:
    budget: {{daily_tokens: 10}}
"""


async def test_a_console_turn_in_a_channels_settings(
    fake_llm: FakeLLM, tmp_path: Path, key_prefix: str, state: State
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(CONFIG.format(prefix=key_prefix))
    # Set in Slack: the tools narrowed further (the file's list is the ceiling).
    await state.shared.channels.set("T0", "C0SUPPORT", "tools", ["get_time"], "U0ADMIN")
    await state.shared.memory.add(
        "T0", "C0SUPPORT", "Refunds need a manager.", "U0BEA", "C0SUPPORT", "k1"
    )
    note = "Escalate outages to #ops."
    fake_llm.add(
        calls(("remember", {"note": note}, "r1"), ("calculate", {"expression": "1+1"}, "c1")),
        text("Saved it."),
        text("Escalate to #ops."),
    )
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "REDIS_URL": REDIS_URL}
    code, out, err = await run_cli(
        "chat",
        "--config",
        str(config),
        "--channel",
        "C0SUPPORT",
        "--user",
        "U0ANA",
        stdin="remember to escalate outages\nwhat about outages?\n",
        env=env,
    )
    assert code == 0, err
    assert out.splitlines() == [
        "Saved it.",
        f"Saved to this channel's memory: “{note}”",
        "Escalate to #ops.",
    ]
    first = fake_llm.requests[0]
    system = first["messages"][0]["content"]
    assert system.startswith("You are the ACME assistant.")
    assert "You answer customer-support questions." in system
    assert "Refunds need a manager." in system and "<@U0BEA>" in system
    assert fake_llm.offered_tools(0) == ["get_time", "remember"]
    refused = json.loads(tool_results(fake_llm.requests[1])["c1"])
    assert refused["error"] == "ToolNotAllowed"  # narrowed in Slack: refused as it runs
    assert note in fake_llm.requests[2]["messages"][0]["content"]  # the next prompt reads it
    notes = await state.shared.memory.notes("C0SUPPORT")
    assert [(n.text, n.by) for n in notes] == [
        (note, "U0ANA"),
        ("Refunds need a manager.", "U0BEA"),
    ]


async def test_a_console_turn_within_the_channels_budget(
    fake_llm: FakeLLM, tmp_path: Path, key_prefix: str, state: State
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(CONFIG.format(prefix=key_prefix))
    fake_llm.add(text("First."), text("Never."))
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "REDIS_URL": REDIS_URL}
    code, out, err = await run_cli(
        "chat", "--config", str(config), "--channel", "C0SMALL", stdin="one\ntwo\n", env=env
    )
    assert code == 0, err
    assert out.splitlines()[0] == "First."
    assert "this channel's daily limit of 10 tokens (for everyone in <#C0SMALL> together)" in out
    assert len(fake_llm.requests) == 1


async def test_a_channel_that_is_no_channel_id_stops_start_up(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("llm: {model: fake-model}\n")
    code, _, err = await run_cli(
        "chat", "--config", str(config), "--channel", "#support", env={"OPENAI_API_KEY": "k"}
    )
    assert code == 2
    assert "--channel: '#support' is not a Slack channel ID" in err
