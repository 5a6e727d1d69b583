"""Buttons: Stop, on the progress message of a running turn."""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.slack.blocks.messages import STOP_ACTION
from bot.slack.inbound.after_ack import AfterAck
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.stops import StopRequests
from permissions.policy import Person, Policy

log = logging.getLogger(__name__)


def register(app: AsyncApp, stops: StopRequests, policy: Policy, later: AfterAck) -> None:
    @app.action(STOP_ACTION)
    async def on_stop(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        try:
            turn = json.loads(body["actions"][0]["value"])
            thread = ThreadKey(turn["team"], turn["channel"], turn["thread"])
        except (KeyError, IndexError, ValueError, TypeError):
            log.warning("a Stop button with an unreadable value")
            return
        clicker = (body.get("user") or {}).get("id") or ""
        # Slack Connect: the clicker's own workspace; "" (none named) is never taken as ours
        clicker_team = (body.get("user") or {}).get("team_id") or ""
        if clicker == turn.get("user"):
            await stops.request(thread, clicker)  # one Redis write: done before the ack
            return

        async def stop_if_admin() -> None:  # may ask Slack (users.info): after the ack
            person = Person(thread.team, clicker, thread.channel, user_team=clicker_team)
            if not await policy.is_admin(person):
                await respond(
                    text="Only the person who asked, or an admin, can stop this answer.",
                    response_type="ephemeral",
                    replace_original=False,
                )
                return
            await stops.request(thread, clicker)

        later.spawn(stop_if_admin(), respond=respond, what="a Stop click")
