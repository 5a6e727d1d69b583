"""Block Kit for the bot's messages, as pure functions of what they show, built with
slack_sdk's block models (which check Slack's limits when serialised)."""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextActionsBlock,
    ContextBlock,
    FeedbackButtonObject,
    FeedbackButtonsElement,
    HeaderBlock,
    MarkdownBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack.blocks.limits import (
    ACTION_VALUE_CHARS,
    MESSAGE_TEXT_CHARS,
    TEXT_OBJECT_CHARS,
    limited,
    shorten,
)
from bot.slack.blocks.tasks import ToolTask, tasks_text
from bot.slack.blocks.tool_output import OutputButton, show_output_button

Blocks = list[dict[str, Any]]

STOP_ACTION = "stop_turn"
FEEDBACK_ACTION = "answer_feedback"
WORKING = "Working on it…"


def _dicts(blocks: list[Block]) -> Blocks:
    return [block.to_dict() for block in blocks]


def message_text(markdown: str) -> str:
    """The ``text`` of a message whose content is in blocks: within Slack's limit."""
    return shorten(markdown, MESSAGE_TEXT_CHARS)


def answer_blocks(markdown: str) -> Blocks:
    """One part of an answer: Slack renders standard markdown in a ``markdown`` block."""
    return _dicts([MarkdownBlock(text=markdown)])


def stop_button(value: str) -> ActionsBlock:
    return ActionsBlock(
        elements=[
            ButtonElement(
                text=PlainTextObject(text="Stop"),
                action_id=STOP_ACTION,
                value=value,
                style="danger",
            )
        ]
    )


def feedback_buttons(turn: dict[str, Any]) -> ContextActionsBlock:
    """Slack's thumbs up / down under an answer; each value names the turn."""

    def value(verdict: str) -> str:
        return json.dumps({**turn, "v": verdict}, separators=(",", ":"))[:ACTION_VALUE_CHARS]

    return ContextActionsBlock(
        elements=[
            FeedbackButtonsElement(
                action_id=FEEDBACK_ACTION,
                positive_button=FeedbackButtonObject(
                    text="Good answer", accessibility_label="This answer helped", value=value("up")
                ),
                negative_button=FeedbackButtonObject(
                    text="Bad answer",
                    accessibility_label="This answer did not help",
                    value=value("down"),
                ),
            )
        ]
    )


def turn_blocks(
    tasks: list[ToolTask],
    markdown: str,
    *,
    finished: bool,
    private: bool,
    stop: str | None = None,
    feedback: dict[str, Any] | None = None,
    output: OutputButton | None = None,
    saved: Block | None = None,
) -> Blocks:
    """A turn's single posted message: its tools (``private``: with what they returned,
    else without: ``tasks.py``), the answer (or a placeholder while none is written), a Stop
    button while it runs (where Slack has no stop of its own), the "Show output" button
    once finished (``output``: where the tools' output is not shown), what the turn saved to
    memory (``saved``: ``memory.py``) and the feedback buttons once it is the answer's last
    part."""
    blocks: list[Block] = []
    if tasks:
        rows = tasks_text(tasks, finished, private=private)
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=rows)]))
    blocks.append(MarkdownBlock(text=markdown or WORKING))
    if stop is not None and not finished:
        blocks.append(stop_button(stop))
    if output is not None and finished:
        blocks.append(show_output_button(output))
    if saved is not None and finished:
        blocks.append(saved)
    if feedback is not None and finished:
        blocks.append(feedback_buttons(feedback))
    return _dicts(blocks)


def turn_text(tasks: list[ToolTask], markdown: str, finished: bool, *, private: bool) -> str:
    """The notification text of that message."""
    if markdown:
        return message_text(markdown)
    return message_text(tasks_text(tasks, finished, private=private) if tasks else WORKING)


def control_blocks(stop: str) -> Blocks:
    """The small message that carries the Stop button where Slack has no stop of its own
    and the answer streams (a stream cannot lose a button once it is in it)."""
    return _dicts(
        [ContextBlock(elements=[MarkdownTextObject(text=f"_{WORKING}_")]), stop_button(stop)]
    )


def home_view(
    roles: list[tuple[str, str]],
    tools: list[tuple[str, str]],
    command: str,
    channels: list[str] | None = None,
    schedules: list[str] | None = None,
) -> View:
    """The App Home tab: how to ask, the person's roles (with where each comes from), the
    tools they may use, (``schedules``) their own schedules, and (``channels``, an admin's)
    the channels that have settings of their own, a row each; long lists end in "…and N
    more"."""
    role_rows = [f"• *{role}* — {shorten(source, 200)}" for role, source in roles]
    tool_rows = [
        f"• `{name}` — {shorten(' '.join((description.splitlines() or [''])[0].split()), 150)}"
        for name, description in tools
    ]
    roles_text = "\n".join(limited(role_rows, TEXT_OBJECT_CHARS)) or (
        "No roles are configured: everyone may use every tool."
    )
    tools_text = "\n".join(limited(tool_rows, TEXT_OBJECT_CHARS)) or (
        "No tools are available to you."
    )
    blocks: list[Block] = [
        HeaderBlock(text="Your agent"),
        SectionBlock(
            text=MarkdownTextObject(
                text="Mention me in a channel, message me here, or open me in the agent "
                f"pane. I answer in the thread. `{command} help` lists the commands."
            )
        ),
        HeaderBlock(text="Your roles"),
        SectionBlock(text=MarkdownTextObject(text=roles_text)),
        HeaderBlock(text="Tools you can use"),
        SectionBlock(text=MarkdownTextObject(text=tools_text)),
    ]
    if schedules is not None:
        schedules_text = "\n".join(limited(schedules, TEXT_OBJECT_CHARS)) or (
            "You have no schedules. Ask me in a message to do something at a time or regularly."
        )
        blocks += [
            HeaderBlock(text="Your schedules"),
            SectionBlock(
                text=MarkdownTextObject(
                    text=f"`{command} schedules` shows their last runs; `{command} pause <id>`, "
                    f"`{command} resume <id>` and `{command} unschedule <id>` change them."
                )
            ),
            SectionBlock(text=MarkdownTextObject(text=schedules_text)),
        ]
    if channels is not None:
        channels_text = "\n".join(limited(channels, TEXT_OBJECT_CHARS)) or (
            "No channel has settings of its own: every channel gets the defaults."
        )
        blocks += [
            HeaderBlock(text="Channels with settings of their own"),
            SectionBlock(
                text=MarkdownTextObject(
                    text=f"`{command} channel` in a channel shows them in full, and where "
                    "each comes from."
                )
            ),
            SectionBlock(text=MarkdownTextObject(text=channels_text)),
        ]
    return View(type="home", blocks=blocks)
