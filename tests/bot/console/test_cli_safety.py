"""``slack-agent tools`` and ``slack-agent chat`` run as a person would, on what must never
get through: a tool a deny list names in either form, and arguments the bot cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.console.test_chat_cli import WAREHOUSE, mcp_config, write_config
from tests.cli_process import run_cli
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results

# The server lists three tools more; two of them only a deny in either form leaves out.
DOTTED = WAREHOUSE + (
    '      env: {WAREHOUSE_EXTRA_TOOL: "delete.everything,delete_all,stock.level"}\n'
)


@pytest.mark.parametrize("deny", ['"delete_*"', '"delete.*"', '"wh_delete_*"'])
async def test_a_deny_list_matches_either_name(deny: str, tmp_path: Path) -> None:
    """A tool named ``delete.everything`` reaches the model as ``wh_delete_everything``: a
    deny pattern written for the model's name or for the server's leaves it out."""
    config = mcp_config(tmp_path, DOTTED + f"      deny: [{deny}]\n", "deny.yaml")
    code, out, err = await run_cli("tools", "--json", "--config", str(config))
    assert code == 0, err
    listed = {row["name"]: row for row in json.loads(out)}
    assert not [name for name in listed if "delete" in name]
    assert listed["wh_stock_level"]["remote_name"] == "stock.level"
    assert listed["wh_lookup_stock"]["remote_name"] == "lookup_stock"
    assert listed["calculate"]["remote_name"] is None


async def test_tools_shows_a_tool_under_both_its_names(tmp_path: Path) -> None:
    config = mcp_config(tmp_path, DOTTED + '      deny: ["delete.*"]\n', "deny.yaml")
    code, out, err = await run_cli("tools", "--config", str(config))
    assert code == 0, err
    lines = out.splitlines()
    at = lines.index("wh_stock_level  [mcp warehouse] (needs approval)")
    assert "    name on the server: stock.level" in lines[at : at + 4]
    assert not [line for line in lines if "delete" in line]
    calculate = lines.index("calculate  [builtin]")
    assert not lines[calculate + 2].startswith("    name on the server")


async def test_bad_arguments_at_the_console_are_tool_errors(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.add(
        calls(
            ("calculate", "[" * 100_000, "d1"),
            ("calculate", json.dumps({"expression": "1+" * 150_000 + "1"}), "l1"),
            args_piece=8192,
        ),
        lambda request: text(
            " ".join(json.loads(tool_results(request)[c])["error"] for c in ("d1", "l1"))
        ),
    )
    code, out, err = await run_cli(
        "chat",
        "--config",
        str(write_config(tmp_path)),
        "--user",
        "U0ADMIN",
        stdin="go\n",
        env={"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"},
    )
    assert code == 0, err
    assert out == "ArgumentsTooDeep ArgumentsTooLarge\n"
    assert "✗ calculate" in err and "nested more than 64 levels deep" in err
    assert "larger than 256 KB" in err
    assert len(err) < 5000 and "Traceback" not in err  # shown short, never crashed
