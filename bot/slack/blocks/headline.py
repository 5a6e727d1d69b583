"""A scheduled run's headline (pure Block Kit): one line in the schedule's channel naming its
owner and its prompt, shortened, and how many earlier runs were missed; the run's answer
goes in its thread. The prompt is shown as text, never as formatting: it can neither
mention nor link anyone (escaped), and what a reader cannot see is written out."""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock

from bot.slack.blocks.escape import escaped, visible
from bot.slack.blocks.limits import shorten

HEADLINE_PROMPT_CHARS = 150  # the prompt shown in a headline, at most (a schedule's: 4,000)


def headline_text(owner: str, prompt: str, missed: int) -> str:
    """ "⏰ Scheduled ask by <@U1>: <prompt> (2 earlier runs were missed)" in mrkdwn."""
    line = escaped(visible(shorten(" ".join(prompt.split()), HEADLINE_PROMPT_CHARS)))  # one line
    said = f":alarm_clock: Scheduled ask by <@{owner}>: {line}"
    if missed > 0:
        runs = "1 earlier run was" if missed == 1 else f"{missed} earlier runs were"
        said += f" _({runs} missed)_"
    return said


def headline_blocks(owner: str, prompt: str, missed: int) -> list[dict[str, Any]]:
    return [
        SectionBlock(text=MarkdownTextObject(text=headline_text(owner, prompt, missed))).to_dict()
    ]
