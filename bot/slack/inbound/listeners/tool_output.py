"""Clicks on "Show output" under a turn's message in a channel: the tools' output, to the
person who clicked alone, in a modal.

A modal opens at once (a click's trigger lasts 3 seconds) and is filled in once the turn's
output is looked up in Redis (``turn/store/tool_outputs.py``) and the policy has said, tool
by tool, whether the clicker may use it here (their roles, the switches, this channel:
``Policy.check``): the output of each tool they may use, a refusal for the others. A tool
that runs as its person (``Tool.per_person``: an MCP server each person signs in to, and any
tool the registry no longer has as a shared one) read the requester's own account: its
output is shown to the turn's requester alone (as the thread's history names them; unknown:
to nobody). Nothing of it is written to the channel. Each look is in the audit log (kind
``output``: who, which turn, the tools shown and those refused), as a read of what may be
restricted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.models.views import View
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.tool_output import (
    SHOW_OUTPUT_ACTION,
    OutputButton,
    gone_view,
    looking_view,
    output_view,
    refusal_view,
)
from bot.slack.calls import safe_call
from bot.slack.inbound.after_ack import AfterAck
from bot.state.audit import AuditEntry, AuditKind, AuditLog
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.tool_outputs import ToolOutput, ToolOutputs
from permissions.policy import Person, Policy
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)

NOT_OPENED = "Sorry, the output could not be opened. Please click again."


@dataclass(frozen=True)
class Look:
    """What one click was shown: the modal, and the tools it showed and refused."""

    view: View
    shown: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def register(
    app: AsyncApp,
    outputs: ToolOutputs,
    policy: Policy,
    audit: AuditLog,
    later: AfterAck,
    registry: ToolRegistry,
) -> None:
    @app.action(SHOW_OUTPUT_ACTION)
    async def on_show_output(
        ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient
    ) -> None:
        await ack()
        try:
            button = OutputButton.parse(str(body["actions"][0]["value"]))
        except (KeyError, IndexError, TypeError, ValueError):
            log.warning("a Show output button with an unreadable value")
            return
        user = body.get("user") or {}
        clicker, clicker_team = str(user.get("id") or ""), str(user.get("team_id") or "")
        where = str((body.get("channel") or {}).get("id") or "")
        trigger = body.get("trigger_id")
        if not trigger:
            return
        # The trigger is good for 3 seconds: the modal opens now, filled in after the ack.
        opened = await safe_call(client.views_open, trigger_id=trigger, view=looking_view())
        view_id = str(((opened or {}).get("view") or {}).get("id") or "")

        async def show() -> None:  # may ask Slack who the clicker is (users.info)
            person = Person(button.team, clicker, button.channel, user_team=clicker_team)
            look = await look_at(
                outputs,
                policy,
                button,
                person,
                clicked_in=where,
                per_person=lambda name: per_person(registry, name),
                requester=await requester_of(outputs, button),
            )
            if look.shown or look.refused:
                await audit.add(_entry(button, clicker, look))
            if view_id:  # closed meanwhile: Slack refuses, and that is fine
                await safe_call(client.views_update, view_id=view_id, view=look.view)
            else:
                await respond(text=NOT_OPENED, response_type="ephemeral", replace_original=False)

        later.spawn(show(), respond=respond, what="a Show output click")


def per_person(registry: ToolRegistry, name: str) -> bool:
    """Whether the tool ``name`` ran as its person: not one of the registry's shared tools."""
    shared = registry.get(name)
    return shared is None or shared.per_person


async def requester_of(outputs: ToolOutputs, button: OutputButton) -> str | None:
    """Who asked the button's turn, as the thread's history keeps it (None: not kept)."""
    history = outputs.history
    thread = ThreadKey(button.team, button.channel, button.thread)
    for item in await history.client.lrange(history.keys.history(thread), 0, -1):
        try:
            entry = json.loads(item)
        except ValueError:
            continue
        if isinstance(entry, dict) and button.turn and entry.get("turn") == button.turn:
            user = entry.get("user")
            return user if isinstance(user, str) and user else None
    return None


async def look_at(
    outputs: ToolOutputs,
    policy: Policy,
    button: OutputButton,
    person: Person,
    clicked_in: str,
    *,
    per_person: Callable[[str], bool],
    requester: str | None,
) -> Look:
    """What the modal shows ``person``: each output of a tool they may use here (of a tool
    that ran as its person: only when they asked the turn), and a refusal for the rest (a
    button clicked elsewhere than its channel shows nothing)."""
    found = await outputs.of_turn(
        ThreadKey(button.team, button.channel, button.thread), button.turn
    )
    if not found:
        return Look(gone_view())
    names = sorted({output.name for output in found})
    if clicked_in != button.channel:
        return Look(refusal_view(names), refused=names)
    theirs = requester is not None and person.user == requester
    allowed = {
        name
        for name in names
        if (theirs or not per_person(name)) and await policy.check(person, name) is None
    }
    shown: list[ToolOutput] = [output for output in found if output.name in allowed]
    refused = [name for name in names if name not in allowed]
    if not shown:
        return Look(refusal_view(refused), refused=refused)
    return Look(output_view(shown, refused), sorted(allowed), refused)


def _entry(button: OutputButton, clicker: str, look: Look) -> AuditEntry:
    return AuditEntry(
        kind=AuditKind.OUTPUT,
        actor=clicker,
        action="output_shown" if look.shown else "output_refused",
        target=", ".join(look.shown or look.refused)[:200],
        outcome="shown" if look.shown else "refused",
        detail={
            "turn": button.turn,
            "channel": button.channel,
            "thread": button.thread,
            "shown": look.shown,
            "refused": look.refused,
        },
    )
