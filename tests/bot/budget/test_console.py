"""``slack-agent chat --user`` within the same spending limits as in Slack: a real process,
prompts on stdin, the fake model server, the embedded Redis."""

from __future__ import annotations

from pathlib import Path

from tests.cli_process import run_cli
from tests.fakes.llm_server import FakeLLM, text

CONFIG = """
llm: {model: fake-model, max_retries: 0}
roles:
  member: {default: true, tools: ["get_time"], budget: {daily_tokens: 25}}
budgets:
  users: {U0ALICE: {daily_tokens: 1000000}}   # looser than her role's: the role's wins
"""


async def test_the_console_person_is_held_to_their_limits(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.add(text("first", usage=(20, 10)), text("second", usage=(20, 10)))
    path = tmp_path / "agent.yaml"
    path.write_text(CONFIG)
    code, out, err = await run_cli(
        "chat",
        "--config",
        str(path),
        "--user",
        "U0ALICE",
        stdin="one\ntwo\n",
        env={"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"},
    )
    assert code == 0, err
    # The first answer spent 30 of the role's 25: the second prompt never reached the model.
    assert out.startswith(
        "first\nSorry, I can't answer this now: the daily limit of 25 tokens that the role "
        "*member* gives each person is reached (30 tokens used today)."
    )
    assert len(fake_llm.requests) == 1
    assert "[failed · " in err
