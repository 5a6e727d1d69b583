"""``slack-agent chat --user``: a console thread shared by several people (on the real Redis)
gives each the thread's questions and answers, but only the tool results they may see."""

from __future__ import annotations

from pathlib import Path

from permissions.withholding import note
from tests.cli_process import run_cli
from tests.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLM, calls, text, tool_results


async def test_each_user_sees_only_the_results_they_may_see(
    fake_llm: FakeLLM, tmp_path: Path, key_prefix: str, state: object
) -> None:
    config = tmp_path / "shared.yaml"
    config.write_text(
        f"""
llm: {{model: fake-model, max_retries: 0}}
redis: {{key_prefix: '{key_prefix}'}}
roles:
  admin: {{members: [U0ADMIN], tools: ["*"]}}
  member: {{default: true, tools: ["get_time"]}}
"""
    )
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "REDIS_URL": REDIS_URL}

    async def chat(prompt: str, *who: str) -> None:
        code, _, err = await run_cli(
            "chat", "--config", str(config), "--thread", "ops", *who, stdin=prompt, env=env
        )
        assert code == 0, err

    fake_llm.add(
        calls(("calculate", {"expression": "6 * 7"}, "c1")),
        text("Done."),
        text("I cannot see it."),
        text("It was 42."),
        text("42, as before."),
    )
    await chat("What is 6 times 7?\n", "--user", "U0ADMIN")
    assert tool_results(fake_llm.requests[1]) == {"c1": "42"}
    # A member in the same thread: the admin's question and answer, not the result.
    await chat("What did the sum give?\n", "--user", "U0SOMEONE")
    member = fake_llm.requests[2]
    assert tool_results(member) == {"c1": note("calculate")}
    contents = [m["content"] for m in member["messages"]]
    assert contents[1:] == [
        "What is 6 times 7?",
        None,
        note("calculate"),
        "Done.",
        "What did the sum give?",
    ]
    # With --role the role decides: an admin's role may use calculate.
    await chat("And now?\n", "--role", "admin")
    assert tool_results(fake_llm.requests[3]) == {"c1": "42"}
    # The admin's own follow-up sees their result.
    await chat("What was it again?\n", "--user", "U0ADMIN")
    assert tool_results(fake_llm.requests[4]) == {"c1": "42"}
