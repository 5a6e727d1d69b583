"""``slack-agent chat`` on a terminal (a pseudo-terminal, as a person types): an MCP server's
URL question shows an https page with its host, and any other page is declined unseen (the
server hears a decline; the person is never asked)."""

from __future__ import annotations

import asyncio
import os
import pty
import sys
from pathlib import Path

from tests.fakes.llm_server import FakeLLM, calls, text, tool_results
from tests.waiting import until

CONFIG = f"""
llm: {{model: fake-model, max_retries: 0}}
mcp:
  servers:
    warehouse:
      command: {sys.executable}
      args: ["-m", "tests.fakes.mcp_server", "stdio"]
      prefix: wh_
      approval: never
"""


class Terminal:
    """The command with a pseudo-terminal for its stdin; what it writes is collected."""

    def __init__(self) -> None:
        self.out = ""
        self.err = ""
        self.master, self.slave = pty.openpty()
        self.process: asyncio.subprocess.Process | None = None
        self.readers: list[asyncio.Task[None]] = []

    async def start(self, *args: str, env: dict[str, str]) -> None:
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SLACK_", "REDIS_"))
        }
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            *args,
            stdin=self.slave,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**environment, **env},
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        self.readers = [
            asyncio.ensure_future(self._read(self.process.stdout, "out")),
            asyncio.ensure_future(self._read(self.process.stderr, "err")),
        ]

    async def _read(self, stream: asyncio.StreamReader, into: str) -> None:
        while piece := await stream.read(4096):
            setattr(self, into, getattr(self, into) + piece.decode(errors="replace"))

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def close(self) -> int:
        assert self.process is not None
        self.type("\x04")  # Ctrl-D at the start of a line: the end of input
        code = await asyncio.wait_for(self.process.wait(), 30)
        await asyncio.gather(*self.readers)
        os.close(self.master)
        os.close(self.slave)
        return code


async def test_a_url_question_on_a_terminal(fake_llm: FakeLLM, tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(CONFIG)
    fake_llm.add(
        calls(
            ("wh_open_page", {"url": "http://accounts.example.com/login"}, "h1"),
            ("wh_open_page", {"url": "javascript:alert(1)"}, "j1"),
        ),
        calls(("wh_open_page", {"url": "https://accounts.example.com/login"}, "s1")),
        lambda request: text(
            "; ".join(f"{k} {v}" for k, v in sorted(tool_results(request).items()))
        ),
    )
    terminal = Terminal()
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-test"}
    await terminal.start("chat", "--config", str(config), env=env)
    try:
        await until(lambda: "you> " in terminal.err, 30)
        terminal.type("sign me in\n")
        await until(lambda: "did you open it? [y/N]" in terminal.err, 30)
        terminal.type("y\n")
        await until(lambda: "s1 page accept" in terminal.out, 30)
    finally:
        code = await terminal.close()
    assert code == 0, terminal.err
    assert terminal.out.strip() == "h1 page decline; j1 page decline; s1 page accept"
    err = terminal.err
    assert "    open: https://accounts.example.com/login\n" in err
    assert "    (a page on accounts.example.com)\n" in err
    # The other two were declined before anyone was asked: never shown, never a question.
    assert err.count("asks: Sign in to the warehouse system") == 1
    assert "open: http://" not in err and "open: javascript" not in err
    assert err.count("open: ") == 1
