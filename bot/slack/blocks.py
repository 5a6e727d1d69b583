"""Block Kit for the bot's messages, as pure functions of what they show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Blocks = list[dict[str, Any]]

REASON_CHARS = 120
TEXT_FIELD_CHARS = 3_900  # a message's `text` (its notification fallback): Slack allows 4,000


@dataclass
class ToolLine:
    call_id: str
    name: str
    state: str = "running"  # running, done, failed, stopped
    duration_ms: float | None = None  # unknown for a call an earlier attempt ran
    reason: str = ""


def answer_blocks(markdown: str) -> Blocks:
    """One part of an answer: Slack renders standard markdown in a ``markdown`` block."""
    return [{"type": "markdown", "text": markdown}]


def message_text(markdown: str) -> str:
    """The ``text`` of a message whose content is in blocks: within Slack's limit."""
    if len(markdown) <= TEXT_FIELD_CHARS:
        return markdown
    return markdown[: TEXT_FIELD_CHARS - 1] + "…"


def progress_text(lines: list[ToolLine], note: str = "", finished: bool = False) -> str:
    """The progress message as text (also its notification fallback)."""
    rows = [_row(line) for line in lines]
    if note:
        rows.insert(0, f"_{_short(note, 300)}_")
    if not rows:
        rows.append("Working on it…")
    if finished and lines:
        total = sum(line.duration_ms or 0.0 for line in lines)
        rows.append(f"Used {len(lines)} tool{'s' if len(lines) != 1 else ''} ({_ms(total)} in all)")
    return "\n".join(rows)


STOP_ACTION = "stop_turn"


def progress_blocks(
    lines: list[ToolLine], note: str = "", finished: bool = False, stop: str | None = None
) -> Blocks:
    """The progress message; while the turn runs, ``stop`` (the turn's address) adds a Stop
    button."""
    blocks: Blocks = [
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": progress_text(lines, note, finished)}],
        }
    ]
    if stop is not None and not finished:
        blocks.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "action_id": STOP_ACTION,
                        "text": {"type": "plain_text", "text": "Stop"},
                        "style": "danger",
                        "value": stop,
                    }
                ],
            }
        )
    return blocks


def tool_list_text(tools: list[tuple[str, str]]) -> str:
    """``name — first line of description``, one per line."""
    if not tools:
        return "No tools are available to you."
    return "\n".join(
        f"• `{name}` — {_short(description.splitlines()[0], 150)}" for name, description in tools
    )


def home_view(
    roles: list[tuple[str, str]], tools: list[tuple[str, str]], command: str
) -> dict[str, Any]:
    """The App Home tab: how to ask, the person's roles (with where each comes from), and the
    tools they may use."""
    roles_text = "\n".join(f"• *{role}* — {source}" for role, source in roles) or (
        "No roles are configured: everyone may use every tool."
    )
    return {
        "type": "home",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Your agent"}},
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "Mention me in a channel, message me here, or open me in the agent "
                    f"pane. I answer in the thread. `{command} help` lists the commands.",
                },
            },
            {"type": "header", "text": {"type": "plain_text", "text": "Your roles"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": roles_text}},
            {"type": "header", "text": {"type": "plain_text", "text": "Tools you can use"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": tool_list_text(tools)}},
        ],
    }


def _row(line: ToolLine) -> str:
    name = f"`{line.name}`"
    if line.state == "running":
        return f":hourglass_flowing_sand: {name} running…"
    if line.state == "done":
        if line.duration_ms is None:
            return f":white_check_mark: {name} done"
        return f":white_check_mark: {name} done in {_ms(line.duration_ms)}"
    if line.state == "stopped":
        return f":black_square_for_stop: {name} stopped"
    reason = f": {_short(line.reason, REASON_CHARS)}" if line.reason else ""
    return f":warning: {name} failed{reason}"


def _ms(duration_ms: float) -> str:
    return f"{duration_ms:.0f} ms" if duration_ms < 10_000 else f"{duration_ms / 1000:.1f} s"


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
