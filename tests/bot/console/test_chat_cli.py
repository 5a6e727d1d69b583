"""``slack-agent chat`` and ``slack-agent tools`` run as a person would: a real process,
prompts piped on stdin, the real openai client talking to the fake server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.cli_process import run_cli
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results

CONFIG = """
system_prompt: "You are the ACME operations assistant."
llm: {model: fake-model, max_retries: 0}
roles:
  admin:
    members: [U0ADMIN]
    tools: ["*"]
  member:
    default: true
    tools: ["get_time"]
"""


def write_config(tmp_path: Path, text: str = CONFIG, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


async def test_a_scripted_conversation(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.add(
        calls(("calculate", {"expression": "12 * 4"}, "c1")),
        lambda request: text(f"It is {tool_results(request)['c1']}."),
        text("You asked about 12 * 4."),
    )
    code, out, err = await run_cli(
        "chat",
        "--config",
        str(write_config(tmp_path)),
        "--user",
        "U0ADMIN",
        stdin="What is 12 times 4?\n\nWhat did I ask?\n",
        env={"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"},
    )
    assert code == 0, err
    assert out == "It is 48.\nYou asked about 12 * 4.\n"
    assert '→ calculate {"expression": "12 * 4"}' in err
    assert "✓ calculate (" in err and "ms) 48" in err
    assert "[answered · 2 rounds · 1 tool call · 40+20 tokens]" in err
    # The conversation is kept across prompts: the third request carries the first turn.
    third = fake_llm.requests[2]["messages"]
    assert third[0]["content"] == "You are the ACME operations assistant."
    assert [m["role"] for m in third[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert third[-1]["content"] == "What did I ask?"


async def test_roles_choose_the_offered_tools(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.add(text("a"), text("b"), text("c"))
    config = str(write_config(tmp_path))
    env = {"OPENAI_BASE_URL": fake_llm.base_url}
    await run_cli("chat", "--config", config, "--user", "U0ADMIN", stdin="hi\n", env=env)
    await run_cli("chat", "--config", config, "--user", "U0SOMEONE", stdin="hi\n", env=env)
    await run_cli("chat", "--config", config, "--role", "admin", stdin="hi\n", env=env)
    assert fake_llm.offered_tools(0) == ["get_time", "calculate"]  # no schedule: no Slack
    assert fake_llm.offered_tools(1) == ["get_time"]
    assert fake_llm.offered_tools(2) == ["get_time", "calculate"]


async def test_a_forbidden_call_is_refused(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.add(calls(("calculate", {"expression": "1+1"}, "c1")), text("no luck"))
    code, _, err = await run_cli(
        "chat",
        "--config",
        str(write_config(tmp_path)),
        stdin="add\n",
        env={"OPENAI_BASE_URL": fake_llm.base_url},
    )
    assert code == 0
    refusal = json.loads(tool_results(fake_llm.requests[1])["c1"])
    assert refusal["error"] == "ToolNotAllowed"
    assert "✗ calculate" in err


async def test_the_model_being_down_is_plain_words(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "chat",
        "--config",
        str(write_config(tmp_path)),
        stdin="hi\n",
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert code == 0
    assert out == "The model service is not answering right now. Please try again in a minute.\n"
    assert "Traceback" not in err


async def test_configuration_errors_stop_start_up(tmp_path: Path) -> None:
    bad = write_config(tmp_path, "llm: {max_rounds: zero}\n", "bad.yaml")
    code, _, err = await run_cli("chat", "--config", str(bad), env={"OPENAI_API_KEY": "k"})
    assert code == 2
    assert "llm.max_rounds: Input should be a valid integer" in err
    code, _, err = await run_cli(
        "chat",
        "--config",
        str(write_config(tmp_path)),
        "--role",
        "boss",
        env={"OPENAI_API_KEY": "k"},
    )
    assert code == 2
    assert "--role: unknown role 'boss' (roles: admin, member)" in err
    code, _, err = await run_cli(
        "chat", env={"SLACK_AGENT_CONFIG": str(bad), "OPENAI_API_KEY": "k"}
    )
    assert code == 2 and "llm.max_rounds" in err


async def test_tools_lists_every_tool(tmp_path: Path) -> None:
    code, out, err = await run_cli("tools", "--json")  # no model key needed to list tools
    assert code == 0, err
    listed = {row["name"]: row for row in json.loads(out)}
    assert set(listed) == {"get_time", "calculate", "schedule"}
    assert listed["calculate"]["source"] == "builtin"
    assert listed["calculate"]["parameters"]["required"] == ["expression"]
    schedule = listed["schedule"]  # the bot's own built-in: asks for approval
    assert schedule["source"] == "builtin" and schedule["confirm"]
    assert schedule["parameters"]["required"] == ["prompt"]
    code, out, _ = await run_cli("tools", env={"OPENAI_API_KEY": "k"})
    assert "calculate  [builtin]" in out


TOOLS_MODULE = '''
from tools import tool


@tool(confirm=True)
def place_order(item: str) -> str:
    """Place an order."""
    return f"ordered {item}"
'''


async def test_on_a_terminal_it_asks_and_ctrl_c_stops_the_answer(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """stdin is a pseudo-terminal here, as for a person at a keyboard."""
    import pty
    import signal

    (tmp_path / "acme_orders.py").write_text(TOOLS_MODULE)
    config = write_config(tmp_path, "tools: {modules: [acme_orders]}\n", "orders.yaml")
    fake_llm.add(
        calls(("place_order", {"item": "flour"}, "c1")),
        lambda request: text(f"Result: {tool_results(request)['c1']}"),
        text("this answer takes too long", delay_s=20),
    )
    master, slave = pty.openpty()
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SLACK_", "REDIS_"))
    }
    environment.update(OPENAI_BASE_URL=fake_llm.base_url, PYTHONPATH=str(tmp_path))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "chat",
        "--config",
        str(config),
        stdin=slave,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
    )
    os.close(slave)
    assert process.stdout is not None and process.stderr is not None
    try:
        os.write(master, b"order flour\n")
        os.write(master, b"y\n")  # the answer to "run place_order ... [y/N]"
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        assert first == b"Result: ordered flour\n"
        os.write(master, b"and more\n")
        await fake_llm.wait_for_requests(3)
        process.send_signal(signal.SIGINT)  # Ctrl-C while the model is answering
        stopped = await asyncio.wait_for(process.stdout.readline(), 10)
        assert stopped == b"Stopped before the answer was finished.\n"
        os.write(master, b"\x04")  # Ctrl-D: end of input
        code = await asyncio.wait_for(process.wait(), 10)
        err = (await process.stderr.read()).decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        os.close(master)
    assert code == 0, err
    assert "tools: get_time, calculate, place_order" in err  # schedule: Slack only
    assert 'run place_order {"item": "flour"} [y/N]' in err
    assert "✓ place_order" in err
    assert "[cancelled · 1 round" in err


async def test_a_thread_resumes_after_a_restart(
    fake_llm: FakeLLM, tmp_path: Path, key_prefix: str, state: object
) -> None:
    """With REDIS_URL, ``--thread X`` in a new process continues thread X."""
    from tests.conftest import REDIS_URL

    config = write_config(tmp_path, f"redis: {{key_prefix: '{key_prefix}'}}\n", "redis.yaml")
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "REDIS_URL": REDIS_URL}
    fake_llm.add(text("Noted: your locker is 42."), text("Your locker is 42."), text("Hello."))
    await run_cli(
        "chat", "--config", str(config), "--thread", "ops", stdin="My locker is 42.\n", env=env
    )
    code, out, err = await run_cli(
        "chat", "--config", str(config), "--thread", "ops", stdin="Which locker?\n", env=env
    )
    assert code == 0, err
    assert out == "Your locker is 42.\n"
    contents = [m["content"] for m in fake_llm.requests[1]["messages"]]
    assert contents[1:] == ["My locker is 42.", "Noted: your locker is 42.", "Which locker?"]
    # Another thread starts empty.
    await run_cli("chat", "--config", str(config), "--thread", "other", stdin="Hi\n", env=env)
    assert [m["role"] for m in fake_llm.requests[2]["messages"]] == ["system", "user"]


async def test_bad_roles_stop_start_up_naming_the_key(tmp_path: Path) -> None:
    """Roles that cannot work stop start-up; a pattern that matches no tool is only a
    warning (tests/bot/console/test_console_approval.py::test_the_readmes_roles_example_starts)."""
    config = write_config(
        tmp_path,
        "roles:\n  clerk:\n    members: [bob]\n    tools: [serch_*]\n",
        "roles.yaml",
    )
    code, _, err = await run_cli("tools", "--config", str(config))
    assert code == 2
    assert "roles: no role has `default: true`" in err
    assert "roles.clerk.members[0]: 'bob' is not a Slack user ID" in err
    assert "serch_*" not in err


async def test_tools_lists_mcp_tools_with_source_schema_and_roles(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        f"""
mcp:
  servers:
    warehouse:
      command: {sys.executable}
      args: ["-m", "tests.fakes.mcp_server", "stdio"]
      prefix: wh_
      allow: ["lookup_*"]
roles:
  clerk: {{members: [U0CLERK], tools: ["wh_*"]}}
  member: {{default: true, tools: ["get_time"]}}
""",
        "mcp.yaml",
    )
    code, out, err = await run_cli("tools", "--json", "--config", str(config))
    assert code == 0, err
    listed = {row["name"]: row for row in json.loads(out)}
    assert set(listed) == {
        "get_time",
        "calculate",
        "schedule",
        "read_mcp_resource",
        "wh_lookup_stock",
    }
    assert listed["read_mcp_resource"]["source"] == "mcp"
    stock = listed["wh_lookup_stock"]
    assert stock["source"] == "mcp warehouse"
    assert stock["parameters"]["required"] == ["item"]
    assert stock["roles"] == ["clerk"]
    assert listed["get_time"]["roles"] == ["member"]
    assert listed["calculate"]["roles"] == []


def mcp_config(tmp_path: Path, servers: str, name: str = "mcp.yaml") -> Path:
    return write_config(tmp_path, f"mcp:\n  servers:\n{servers}", name)


WAREHOUSE = f"""    warehouse:
      command: {sys.executable}
      args: ["-m", "tests.fakes.mcp_server", "stdio"]
      prefix: wh_
"""
UNASKED = WAREHOUSE + "      approval: never\n"  # its tools run without a person's approval


async def test_tools_shows_titles_annotations_and_output_schemas(tmp_path: Path) -> None:
    code, out, err = await run_cli("tools", "--config", str(mcp_config(tmp_path, WAREHOUSE)))
    assert code == 0, err
    lines = out.splitlines()
    at = lines.index("wh_count_pallets — Count pallets  [mcp warehouse]")
    assert lines[at + 1 : at + 3] == [
        "    Pallets in an aisle (read-only).",
        "    annotations: read-only, idempotent",
    ]
    # What may change things needs a person's approval (MCP's defaults); read-only does not.
    delete = lines.index(
        "wh_delete_everything — Delete everything  [mcp warehouse] (needs approval)"
    )
    assert lines[delete + 2] == "    annotations: destructive, closed-world"
    totals = lines.index("wh_inventory_totals  [mcp warehouse] (needs approval)")
    assert any(line.startswith("    returns: {") for line in lines[totals : totals + 7])
    code, out, _ = await run_cli(
        "tools", "--json", "--config", str(mcp_config(tmp_path, WAREHOUSE))
    )
    listed = {row["name"]: row for row in json.loads(out)}
    assert listed["wh_count_pallets"]["title"] == "Count pallets"
    assert not listed["wh_count_pallets"]["confirm"] and listed["wh_lookup_stock"]["confirm"]
    assert listed["wh_count_pallets"]["annotations"] == {
        "readOnlyHint": True,
        "idempotentHint": True,
    }


async def test_tools_exits_1_when_a_server_could_not_be_listed(tmp_path: Path) -> None:
    servers = WAREHOUSE + (
        f"    broken:\n      command: {sys.executable}\n"
        '      args: ["-c", "import sys; sys.exit(3)"]\n'
        "      connect_timeout_s: 5\n"
    )
    code, out, err = await run_cli("tools", "--config", str(mcp_config(tmp_path, servers)))
    assert code == 1
    assert "wh_lookup_stock  [mcp warehouse]" in out and "calculate  [builtin]" in out
    assert (
        "slack-agent: MCP server broken is not connected (MCPError: Connection closed): its "
        "tools are not listed"
    ) in err


async def test_two_servers_with_the_same_tools_stop_start_up(tmp_path: Path) -> None:
    servers = WAREHOUSE + WAREHOUSE.replace("warehouse:", "copy:")
    code, _, err = await run_cli("tools", "--config", str(mcp_config(tmp_path, servers)))
    assert code == 2
    assert "MCP servers warehouse and copy both offer " in err
    assert 'give one of them a prefix, e.g. mcp.servers.copy.prefix: "copy_"' in err


async def test_a_claude_desktop_servers_file(tmp_path: Path) -> None:
    """The mcpServers file of another client, as is, running the published mcp-server-time."""
    (tmp_path / "claude_desktop_config.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {
                        "command": sys.executable,
                        "args": ["-m", "mcp_server_time", "--local-timezone=${TEST_TZ}"],
                    }
                }
            }
        )
    )
    config = write_config(
        tmp_path,
        "mcp:\n  servers_file: claude_desktop_config.json\n  servers:\n    time: {prefix: time_}\n",
    )
    code, out, err = await run_cli(
        "tools", "--json", "--config", str(config), env={"TEST_TZ": "Europe/Berlin"}
    )
    assert code == 0, err
    listed = {row["name"]: row for row in json.loads(out)}
    assert listed["time_get_current_time"]["source"] == "mcp time"
    # The server was started with the substituted value (its tool's description quotes
    # it); `tools` prints it redacted, as every value substituted from ${NAME}.
    parameters = json.dumps(listed["time_get_current_time"]["parameters"])
    assert "Use '[redacted]' as local timezone" in parameters
    assert "Europe/Berlin" not in out


async def test_a_script_declines_questions_and_shows_progress(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    go.touch()  # the counting tool need not wait
    fake_llm.add(
        calls(
            ("wh_restock", {"item": "flour"}, "r1"), ("wh_long_count", {"go_file": str(go)}, "l1")
        ),
        lambda request: text(f"{tool_results(request)['r1']}; {tool_results(request)['l1']}"),
    )
    code, out, err = await run_cli(
        "chat",
        "--config",
        str(mcp_config(tmp_path, UNASKED)),
        stdin="restock and count\n",
        env={"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"},
    )
    assert code == 0, err
    assert out == "restock decline; counted 5 aisles\n"  # nobody to ask in a script
    assert "  … wh_long_count 40 % – counting aisle 2" in err
