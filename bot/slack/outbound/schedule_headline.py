"""A scheduled run's headline in its channel (``firing.Headlines``): the top-level message the
run's answer goes under, posted once per run by whichever replica fires it.

Posted tagged with the schedule and the run (``tagging.headline_tag``); a replica that takes
over a run whose post's outcome was never learnt looks for that tag in the channel's recent
history (one page of ``conversations.history`` from shortly before the run) before posting.
Slack refusing the channel for good (``errors.channel_refusal``: the bot is not in it, it is
archived or gone, posting there is restricted) is raised as ``firing.ChannelRefused``: the
firing pauses the schedule. Every other failure is raised as it is: the firing tries again
when its claim lapses. Broadcasts in the prompt are neutralised by the client, as in
everything the bot writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from slack_sdk.web.async_client import AsyncWebClient

from bot.schedules.firing import ChannelRefused
from bot.slack.blocks.headline import headline_blocks, headline_text
from bot.slack.errors import channel_refusal
from bot.slack.identity import WhoAmI
from bot.slack.outbound.tagging import PAGE, headline_tag, is_headline
from bot.state.schedules import Schedule

EARLY_S = 60.0  # the channel is searched from this long before the run (clocks differ)


class SlackHeadlines:
    def __init__(self, client: AsyncWebClient, who_am_i: WhoAmI) -> None:
        self.client = client
        self.who_am_i = who_am_i

    async def post(self, schedule: Schedule, occurrence: float, missed: int) -> str:
        with refusals_sorted():
            response = await self.client.chat_postMessage(
                channel=schedule.channel,
                text=headline_text(schedule.owner, schedule.prompt, missed),
                blocks=headline_blocks(schedule.owner, schedule.prompt, missed),
                metadata=headline_tag(schedule.id, occurrence),
                unfurl_links=False,
                unfurl_media=False,
            )
        return str(response["ts"])

    async def find(self, schedule: Schedule, occurrence: float) -> str | None:
        me = await self.who_am_i()
        with refusals_sorted():
            response = await self.client.conversations_history(
                channel=schedule.channel,
                oldest=f"{occurrence - EARLY_S:.6f}",
                limit=PAGE,
                include_all_metadata=True,
            )
        for message in response.get("messages") or ():
            if is_headline(message, me, schedule.id, occurrence):
                return str(message["ts"])
        return None


@contextlib.contextmanager
def refusals_sorted() -> Iterator[None]:
    """Slack refusing the channel for good, inside, is raised as :class:`ChannelRefused`."""
    try:
        yield
    except Exception as exc:
        reason = channel_refusal(exc)
        if reason is None:
            raise
        raise ChannelRefused(reason) from exc
