"""A turn's tool output, opened privately (pure Block Kit): the "Show output" button under a
turn's message in a channel, and the modal it opens for the person who clicked, with the
output of each tool they may use and a refusal for the others.

Output is shown as preformatted rich text: its words are never read as mrkdwn, so it can
neither mention anyone nor link anywhere, and no value can end its block.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    PlainTextObject,
    RichTextBlock,
    RichTextElementParts,
    RichTextPreformattedElement,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack.blocks.limits import shorten
from bot.turn.store.tool_outputs import ToolOutput

SHOW_OUTPUT_ACTION = "show_tool_output"
TITLE = "Tool output"
PIECE_CHARS = 2_800  # output per preformatted block
MAX_BLOCKS = 100  # a modal's blocks, at most
LOOKING = "Looking the output up…"
GONE = "The output of these tools is no longer kept."


@dataclass(frozen=True)
class OutputButton:
    """What the button carries: the turn whose output it opens, and its thread."""

    team: str
    channel: str
    thread: str
    turn: str  # the turn's entry id

    def value(self) -> str:
        return json.dumps(
            {"team": self.team, "channel": self.channel, "thread": self.thread, "turn": self.turn},
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, value: str) -> OutputButton:
        """From a button's value; raises ValueError when it is not one of ours."""
        try:
            data = json.loads(value)
            return cls(
                str(data["team"]), str(data["channel"]), str(data["thread"]), str(data["turn"])
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError("not a Show output button's value") from exc


def show_output_button(button: OutputButton) -> ActionsBlock:
    """Under a turn's message in a channel: opens the tools' output to the clicker alone."""
    return ActionsBlock(
        elements=[
            ButtonElement(
                text=PlainTextObject(text="Show output"),
                action_id=SHOW_OUTPUT_ACTION,
                value=button.value(),
                accessibility_label="Show the tools' output to you alone",
            )
        ]
    )


def _modal(blocks: Sequence[Block]) -> View:
    return View(
        type="modal",
        title=PlainTextObject(text=TITLE),
        close=PlainTextObject(text="Close"),
        blocks=list(blocks),
    )


def _words(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text))


def looking_view() -> View:
    """Opened at once (a click's trigger lasts 3 seconds), filled in once looked up."""
    return _modal([_words(LOOKING)])


def gone_view() -> View:
    return _modal([_words(GONE)])


def refusal_view(tools: Sequence[str]) -> View:
    """The clicker may use none of the tools: nothing of their output."""
    names = ", ".join(f"`{name}`" for name in dict.fromkeys(tools))
    return _modal(
        [_words(f"Sorry, only people who may use {names} can see what it returned here.")]
    )


def output_view(shown: Sequence[ToolOutput], refused: Sequence[str]) -> View:
    """Each output the clicker may see, whole where it fits (split over preformatted blocks),
    and a line for each tool whose output they may not see."""
    blocks: list[Block] = []
    for output in shown:
        pieces = [
            output.content[i : i + PIECE_CHARS] for i in range(0, len(output.content), PIECE_CHARS)
        ] or [""]
        blocks.append(_words(f"*{output.name}*"))
        blocks.extend(
            RichTextBlock(
                elements=[
                    RichTextPreformattedElement(
                        elements=[RichTextElementParts.Text(text=piece or " ")]
                    )
                ]
            )
            for piece in pieces
        )
    if refused:
        names = ", ".join(f"`{name}`" for name in dict.fromkeys(refused))
        blocks.append(
            ContextBlock(
                elements=[
                    MarkdownTextObject(
                        text=shorten(f"Not shown: you may not use {names} here.", 2_000)
                    )
                ]
            )
        )
    if len(blocks) > MAX_BLOCKS:
        more = len(blocks) - (MAX_BLOCKS - 1)
        blocks = [*blocks[: MAX_BLOCKS - 1], _words(f"…and {more} more blocks not shown.")]
    return _modal(blocks)
