"""``slack-agent chat``: prompts from a terminal (or stdin lines), answers streamed back."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from bot.agent.loop import LoopSettings, run_turn
from bot.channels.reader import ChannelView
from bot.channels.remember import with_remember
from bot.console.approval import console_approver
from bot.console.asker import ConsoleAsker
from bot.console.channel import ConsoleChannel, prompt_id
from bot.console.display import ConsoleDisplay
from bot.console.interrupt import CtrlC
from bot.console.lines import LineReader
from bot.llm.model import ChatModel
from bot.llm.tokens import TokenEstimator
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.history import RedisHistory
from permissions.withholding import requester_scope
from tools.approval import Approver
from tools.call_context import Requester, for_requester
from tools.toolset import Toolset

if TYPE_CHECKING:
    from bot.console.sign_in import ConsoleTerminal

CONSOLE_TEAM = "console"
CONSOLE_CHANNEL = "console"
HELP = "Commands: /tools lists your tools, /exit quits. Ctrl-C stops a running answer."


@dataclass(frozen=True)
class ChatOptions:
    thread: str = "default"
    user: str | None = None
    role: str | None = None
    yes: bool = False  # approve every tool that needs confirmation (for scripts)
    channel: str | None = None  # a Slack channel's ID: its settings, notes and budget


@dataclass(frozen=True)
class Conversation:
    """What the console talks through: the model, the loop's settings, and the history of
    its threads (kept in Redis like Slack's), trimmed to ``budget`` tokens; with
    ``--channel``, that channel's settings (``channel.py``)."""

    model: ChatModel
    settings: LoopSettings
    history: RedisHistory
    budget: int
    estimator: TokenEstimator
    channel: ConsoleChannel | None = None


@dataclass(frozen=True)
class ConsoleTools:
    """The tools the console's person may use, as the policy gives them on every surface
    (``Policy.guarded``: roles, switches, and each call that needs a person's approval put
    to the approver passed in), the roles that decided it, and whether that person may
    approve (``approval.approvers``: they are the requester); and, when an MCP server signs
    each person in, how their calls wait for them to connect at the terminal (``sign_in``:
    the guarded tools wrapped in the sign-in gate, ``bot/console/sign_in.py``). ``guarded``
    is given the channel's settings with ``--channel`` (its tools narrow the offer)."""

    guarded: Callable[[Approver | None, ChannelView | None], Toolset]
    roles: list[str]
    may_decide: bool
    sign_in: Callable[[Toolset, ConsoleTerminal], Toolset] | None = None


async def run_chat(
    conversation: Conversation,
    tools: ConsoleTools,
    options: ChatOptions,
    *,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    roles, store, channel = tools.roles, conversation.history, conversation.channel
    where = channel.id if channel is not None else CONSOLE_CHANNEL
    key = ThreadKey(CONSOLE_TEAM, where, options.thread)
    display = ConsoleDisplay(stdout, stderr)
    interactive = stdin.isatty()
    lines = LineReader(stdin)
    # Calls that need approval (the same rule as in Slack) are asked for here; tools run for
    # the console's person, and MCP questions are asked here on a terminal only.
    approver = console_approver(interactive, options.yes, tools.may_decide, lines, stderr)
    ctrl_c = CtrlC()  # a turn's, or a sign-in's inside it
    terminal: ConsoleTerminal | None = None
    if tools.sign_in is not None:
        from bot.console.sign_in import ConsoleTerminal  # with the MCP SDK, only when used

        terminal = ConsoleTerminal(interactive, stderr, ctrl_c)
    asker = ConsoleAsker(lines, stderr) if interactive else None
    user = options.user or "console"
    requester = Requester(CONSOLE_TEAM, user, where, options.thread, asker, CONSOLE_TEAM)

    def toolset_in(view: ChannelView | None, prompt: str) -> Toolset:
        """The person's tools for one prompt, in the channel's settings ``view``."""
        approved = tools.guarded(approver, view)
        if tools.sign_in is not None and terminal is not None:
            approved = tools.sign_in(approved, terminal)
        remember = channel.remember(view, prompt) if channel is not None and view else None
        return with_remember(for_requester(approved, requester), remember)

    view = await channel.read() if channel is not None else None
    if interactive:
        names = ", ".join(t.name for t in await toolset_in(view, "").list_tools()) or "none"
        who = f" as {', '.join(roles)}" if roles else ""
        at = f" · channel {where}" if channel is not None else ""
        stderr.write(f"slack-agent chat · thread {options.thread}{at}{who} · tools: {names}\n")
        stderr.write(HELP + "\n")

    async for prompt in _prompts(lines, stderr, interactive):
        if prompt in ("/exit", "/quit"):
            break
        view = await channel.read() if channel is not None else None  # once a prompt
        toolset = toolset_in(view, prompt_id())
        if prompt == "/tools":
            for tool in await toolset.list_tools():
                stderr.write(f"  {tool.name}: {tool.description.splitlines()[0]}\n")
            continue
        if prompt == "/help":
            stderr.write(HELP + "\n")
            continue
        # The thread as this person may see it: others' results of tools they may not use
        # are withheld (the same rule as in Slack; with --role, the role decides).
        scope = requester_scope(user, toolset)
        history = await store.for_model(key, conversation.budget, conversation.estimator, scope)
        model = conversation.model
        context = ""
        if channel is not None and view is not None:
            model, context = await channel.model(view), channel.context(view)
        cancel = asyncio.Event()
        # While a turn runs on a terminal, Ctrl-C stops the turn instead of the console.
        with ctrl_c.calls(cancel.set, enabled=interactive):
            result = await run_turn(
                model,
                conversation.settings,
                history,
                prompt,
                toolset,
                observer=display,
                cancel=cancel,
                context=context,
            )
        if result.new_messages:
            await store.append(key, result.new_messages, user=user)
    return 0


async def _prompts(lines: LineReader, stderr: TextIO, interactive: bool) -> AsyncIterator[str]:
    """Non-empty lines: with a prompt on a terminal, plainly from a pipe or a file."""
    while True:
        if interactive:
            stderr.write("you> ")
            stderr.flush()
        line = await lines.readline()
        if not line:
            if interactive:
                stderr.write("\n")
            return
        text = line.strip()
        if text:
            yield text
