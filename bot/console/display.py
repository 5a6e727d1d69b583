"""Print a turn as it happens: tool lines and a footer on stderr, the answer on stdout (with a
line for each note the turn saved to memory)."""

from __future__ import annotations

from typing import TextIO

from bot.agent.events import (
    AgentEvent,
    TextDelta,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    TurnFinished,
)
from bot.agent.result import CallOutcome, TurnResult
from bot.channels.remember import saved_notes, saved_words

ARGUMENT_CHARS = 200


class ConsoleDisplay:
    """An observer that writes to two streams. Safe to use for one turn at a time."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self._mid_line = False
        self._round = 0
        self._round_text: list[str] = []
        self._progress: dict[str, str] = {}  # the last progress shown per call

    async def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            if event.round != self._round:
                self._round, self._round_text = event.round, []
            self._round_text.append(event.text)
            self.out.write(event.text)
            self.out.flush()
            self._mid_line = not event.text.endswith("\n")
        elif isinstance(event, ToolStarted):
            self._break_line()
            self.err.write(f"  → {event.name} {_short(event.arguments)}\n")
            self.err.flush()
        elif isinstance(event, ToolProgress):
            if self._progress.get(event.call_id) == event.text:
                return
            self._progress[event.call_id] = event.text
            self._break_line()
            self.err.write(f"  … {event.name} {event.text}\n")
            self.err.flush()
        elif isinstance(event, ToolFinished):
            mark = "✓" if event.ok else "…" if event.outcome is CallOutcome.DEFERRED else "✗"
            kind = f"{event.error}: " if event.error else ""
            self.err.write(
                f"  {mark} {event.name} ({event.duration_ms:.0f} ms) {kind}{event.preview}\n"
            )
            self.err.flush()
        elif isinstance(event, TurnFinished):
            self.finish(event.result)

    def finish(self, result: TurnResult) -> None:
        """Print the answer unless it was streamed already (failures, empty answers)."""
        self._break_line()
        streamed = "".join(self._round_text) if self._round == result.rounds else ""
        if result.text.strip() != streamed.strip():
            self.out.write(result.text + "\n")
        for note in saved_notes(result.new_messages):
            self.out.write(saved_words(note) + "\n")
        self.out.flush()
        self._round, self._round_text = 0, []
        self.err.write(footer(result) + "\n")
        self.err.flush()

    def _break_line(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False


def footer(result: TurnResult) -> str:
    usage = result.usage
    parts = [
        result.stop_reason.value,
        f"{result.rounds} round{'s' if result.rounds != 1 else ''}",
        f"{len(result.executions)} tool call{'s' if len(result.executions) != 1 else ''}",
        f"{usage.prompt_tokens}+{usage.completion_tokens} tokens"
        + (" (estimated)" if usage.estimated else ""),
    ]
    if result.cost is not None:
        parts.append(f"${result.cost:.6f}")
    return "  [" + " · ".join(parts) + "]"


def _short(arguments: str) -> str:
    flat = " ".join(arguments.split())
    return flat if len(flat) <= ARGUMENT_CHARS else flat[: ARGUMENT_CHARS - 1] + "…"
