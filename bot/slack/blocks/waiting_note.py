"""The note in a thread whose later messages wait behind a turn waiting for a person: for an
approval, which card, with a link to it, and who may decide; for a sign-in, who must connect
which server (pure Block Kit)."""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock

from bot.slack.blocks.escape import escaped, visible
from bot.slack.blocks.limits import SECTION_TEXT_CHARS, shorten

WAITING = "waiting"  # the note's tag's kind


def waiting_text(tools: list[str], card_link: str, who: str) -> str:
    """The note in mrkdwn: the tools the card asks about (the model's choice, so escaped),
    a link to the card ("" when there is none to give: "the approval card above"), and who
    may decide (``bot.slack.blocks.deciders.who_decides``)."""
    names = ", ".join(f"`{escaped(tool)}`" for tool in dict.fromkeys(tools))
    card = f"<{card_link}|the approval card>" if card_link else "the approval card above"
    return (
        f":hourglass_flowing_sand: This thread is waiting for a decision on {card} "
        f"({names}). {who} can approve or deny it there. I'll answer the messages that came "
        "after it, in order, once it is decided or expires."
    )


def sign_in_waiting_text(user: str, servers: list[str], card_link: str) -> str:
    """The note in mrkdwn for a turn waiting for ``user`` to connect ``servers`` (escaped,
    each once), with a link to the sign-in card ("" when there is none to give)."""
    names = " and ".join(f"*{escaped(visible(server))}*" for server in dict.fromkeys(servers))
    card = f" (<{card_link}|the sign-in card>)" if card_link else ""
    return (
        f":hourglass_flowing_sand: This thread waits for <@{escaped(user)}> to connect "
        f"{names}{card}. I'll answer the messages that came after it, in order, once they "
        "connect, choose not to, or the sign-in expires."
    )


def waiting_blocks(text: str) -> list[dict[str, Any]]:
    return [SectionBlock(text=MarkdownTextObject(text=shorten(text, SECTION_TEXT_CHARS))).to_dict()]
