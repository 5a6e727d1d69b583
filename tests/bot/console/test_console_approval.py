"""The approval policy in ``slack-agent chat`` and ``slack-agent tools``, run as a person would
(real processes, the fake model server): the same rule as in Slack decides which calls wait
for a person (a tool's ``confirm``, an ``approval.tools`` glob, a role's exemption, an MCP
server's annotations) and who may say yes; a call's arguments are checked before anyone is
asked; ``tools`` says which tools wait, and why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.bot.console.test_console_terminal import Terminal
from tests.cli_process import run_cli
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results
from tests.waiting import until

CONFIG = """
llm: {model: fake-model, max_retries: 0}
tools: {modules: [tests.fakes.trading_tools]}
approval: {tools: ["get_*"]}
roles:
  admin: {admin: true, members: [U0ADMIN], tools: ["*"]}
  desk: {members: [U0DESK], tools: ["*"], approval_exempt: ["get_*"]}
  trader: {default: true, tools: ["*"]}
"""


def write(tmp_path: Path, text_: str = CONFIG, name: str = "agent.yaml") -> str:
    path = tmp_path / name
    path.write_text(text_)
    return str(path)


def result(fake_llm: FakeLLM, request: int, call_id: str) -> str:
    return tool_results(fake_llm.requests[request])[call_id]


async def chat(fake_llm: FakeLLM, config: str, *args: str) -> tuple[int, str, str]:
    return await run_cli(
        "chat",
        "--config",
        config,
        *args,
        stdin="price of ACME?\n",
        env={"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"},
    )


async def test_a_glob_matched_tool_is_refused_in_a_script_and_the_model_is_told_why(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Reading from a pipe nobody can be asked: a tool `approval.tools` names does not run
    (it ran unasked before); with --yes it runs, and a role exempt from it runs it unasked."""
    config = write(tmp_path)
    for _ in range(3):
        fake_llm.add(calls(("get_price", {"symbol": "ACME"}, "p1")), text("ok"))
    code, _, err = await chat(fake_llm, config)
    assert code == 0, err
    refused = json.loads(result(fake_llm, 1, "p1"))
    assert refused == {
        "error": "NeedsConfirmation",
        "message": "get_price needs a person's approval, and nobody can be asked: the console "
        "reads from a pipe, not a terminal (run it on a terminal to be asked, or with --yes). "
        "It did not run.",
    }
    assert "✗ get_price" in err
    code, _, err = await chat(fake_llm, config, "--yes")
    assert code == 0, err
    assert result(fake_llm, 3, "p1") == "ACME: 101.5"
    code, _, err = await chat(fake_llm, config, "--user", "U0DESK")  # exempt: no --yes needed
    assert code == 0, err
    assert result(fake_llm, 5, "p1") == "ACME: 101.5"


async def test_only_someone_who_may_decide_approves_at_the_console(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """`approval.approvers: [admins]`: the console's person is the requester, who may not
    decide, so even --yes does not run the call; an admin's --yes does."""
    config = write(
        tmp_path, CONFIG.replace('{tools: ["get_*"]}', '{tools: ["get_*"], approvers: [admins]}')
    )
    fake_llm.add(calls(("place_order", {"symbol": "ACME", "quantity": 1}, "o1")), text("no"))
    fake_llm.add(calls(("place_order", {"symbol": "ACME", "quantity": 1}, "o1")), text("yes"))
    code, _, err = await chat(fake_llm, config, "--yes", "--user", "U0ALICE")
    assert code == 0, err
    refused = json.loads(result(fake_llm, 1, "o1"))
    assert refused["error"] == "NeedsConfirmation"
    assert "the console's person may not give it (approval.approvers)" in refused["message"]
    code, _, err = await chat(fake_llm, config, "--yes", "--user", "U0ADMIN")
    assert code == 0, err
    assert result(fake_llm, 3, "o1") == "bought 1 ACME"


async def test_on_a_terminal_a_glob_matched_tool_asks_and_bad_arguments_ask_nobody(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """A person at the terminal is asked y/N for the tool `approval.tools` names; a call
    whose arguments do not fit the tool's schema goes back to the model as a tool error and
    nobody is asked."""
    fake_llm.add(
        calls(
            ("place_order", {"symbol": "ACME", "quantity": "lots"}, "o1"),
            ("get_price", {"symbol": "ACME"}, "p1"),
        ),
        lambda request: text(f"{tool_results(request)['o1']} | {tool_results(request)['p1']}"),
    )
    terminal = Terminal()
    await terminal.start(
        "chat",
        "--config",
        write(tmp_path),
        env={"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"},
    )
    try:
        terminal.type("buy lots of ACME and tell me its price\n")
        await until(lambda: "[y/N]" in terminal.err, 30)
        terminal.type("y\n")
        await until(lambda: "bought" in terminal.out or "| ACME" in terminal.out, 30)
    finally:
        code = await terminal.close()
    assert code == 0, terminal.err
    assert '? run get_price {"symbol": "ACME"} [y/N]' in terminal.err
    assert terminal.err.count("[y/N]") == 1  # place_order's bad call asked nobody
    invalid, price = terminal.out.strip().split(" | ")
    assert json.loads(invalid) == {
        "error": "InvalidArguments",
        "message": "Invalid arguments for place_order: quantity: Input should be a valid "
        "integer, unable to parse string as an integer",
    }
    assert price == "ACME: 101.5"


MCP = f"""
mcp:
  servers:
    warehouse:
      command: {sys.executable}
      args: ["-m", "tests.fakes.mcp_server", "stdio"]
      prefix: wh_
      allow: ["make_directory", "count_pallets", "delete_everything"]
    opted_in:
      command: {sys.executable}
      args: ["-m", "tests.fakes.mcp_server", "stdio"]
      prefix: in_
      allow: ["make_directory"]
      approval: destructive
"""


async def test_tools_says_which_tools_wait_for_approval_and_why(tmp_path: Path) -> None:
    config = write(tmp_path, CONFIG + MCP)
    code, out, err = await run_cli("tools", "--config", config)
    assert code == 0, err
    lines = out.splitlines()

    def shown(header: str) -> list[str]:
        at = lines.index(header)
        end = next((i for i in range(at + 1, len(lines)) if not lines[i].startswith(" ")), None)
        return lines[at + 1 : end]

    assert 'needs approval: approval.tools: "get_*"; unasked for roles: desk' in " ".join(
        shown("get_price  [module tests.fakes.trading_tools] (needs approval)")
    )
    assert "    needs approval: @tool(confirm=True)" in shown(
        "place_order  [module tests.fakes.trading_tools] (needs approval)"
    )
    writes = "MCP annotations do not say readOnlyHint: true (approval: writes)"
    assert f"    needs approval: {writes}" in (
        shown("wh_make_directory — Make a directory  [mcp warehouse] (needs approval)")
    )
    assert not any(
        "needs approval" in line
        for line in shown("wh_count_pallets — Count pallets  [mcp warehouse]")
    )
    assert not any(
        "needs approval" in line
        for line in shown("in_make_directory — Make a directory  [mcp opted_in]")
    )
    code, out, err = await run_cli("tools", "--json", "--config", config)
    assert code == 0, err
    listed = {row["name"]: row["approval"] for row in json.loads(out)}
    assert listed["get_price"] == {
        "needed": True,
        "why": ['approval.tools: "get_*"'],
        "exempt_roles": ["desk"],
    }
    assert listed["place_order"] == {
        "needed": True,
        "why": ["@tool(confirm=True)"],
        "exempt_roles": [],
    }
    assert listed["wh_delete_everything"]["why"] == [
        "MCP annotations do not say readOnlyHint: true (approval: writes)"
    ]
    assert listed["wh_make_directory"]["needed"] and not listed["in_make_directory"]["needed"]
    assert listed["wh_count_pallets"] == {"needed": False, "why": [], "exempt_roles": []}


README_ROLES = Path(__file__).parents[3] / "README.md"


def readme_roles_and_approval() -> str:
    """The README's `roles:` and `approval:` example, as a newcomer copies it."""
    readme = README_ROLES.read_text()
    start = readme.index("\nroles:  ", readme.index("A complete example with every key"))
    return readme[start : readme.index("\nbudgets:", start)] + "\n"


@pytest.mark.parametrize("command", ["tools", "chat"])
async def test_the_readmes_roles_example_starts(
    command: str, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Its patterns name tools this bot does not have (`search_*`, `!search_payroll`): they
    are warnings at start-up, never a stop."""
    llm = "llm: {model: gpt-4o-mini, prices: {gpt-4o-mini: {input: 0.15, output: 0.6}}}\n"
    config = write(tmp_path, llm + readme_roles_and_approval())
    fake_llm.add(text("hello"))
    code, out, err = await run_cli(
        command,
        "--config",
        config,
        stdin="hi\n",
        env={"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"},
    )
    assert code == 0, err
    assert (
        "'!search_payroll' matches no tool (tools: calculate, get_time, schedule); "
        "it denies nothing" in err
    )
    assert ("hello" in out) if command == "chat" else ("get_time  [builtin]" in out)
