"""``run --workers N`` and ``worker --processes N`` on the command line: parsed, checked,
and refused with a message naming the option."""

from __future__ import annotations

import pytest

from bot.cli import parser
from bot.process.worker_count import cpu_count
from tests.cli_process import run_cli


def test_workers_and_processes_default_to_none_meaning_one_per_cpu() -> None:
    run = parser().parse_args(["run"])
    assert run.workers is None and run.no_worker is False
    worker = parser().parse_args(["worker"])
    assert worker.processes is None and worker.supervisor_pipe is None
    assert parser().parse_args(["run", "--workers", "0"]).workers == 0
    assert parser().parse_args(["run", "--workers", "3"]).workers == 3
    assert parser().parse_args(["worker", "--processes", "2"]).processes == 2


def test_the_help_says_what_the_default_is_here(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"(default: one per CPU, {cpu_count()} here; 0: the worker loop runs" in shown


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["run", "--workers", "-1"], "argument --workers: -1 is below 0"),
        (["run", "--workers", "two"], "argument --workers: 'two' is not a whole number"),
        (["worker", "--processes", "-2"], "argument --processes: -2 is below 0"),
        (["worker", "--processes", "1.5"], "argument --processes: '1.5' is not a whole number"),
        (
            ["run", "--no-worker", "--workers", "2"],
            "argument --workers: not allowed with argument --no-worker",
        ),
    ],
)
def test_bad_numbers_are_refused_naming_the_option(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(arguments)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


async def test_worker_processes_are_refused_beside_the_embedded_redis() -> None:
    env = {
        "OPENAI_API_KEY": "sk-test",
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": "http://127.0.0.1:9/api/",  # never reached
    }
    for arguments in (["run", "--workers", "2"], ["worker", "--processes", "2"]):
        code, _, err = await run_cli(*arguments, env=env, limit_s=30)
        option = arguments[1]
        assert code == 2, err
        assert f"{option} 2: worker processes need REDIS_URL" in err
        assert "Traceback" not in err
