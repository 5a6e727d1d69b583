"""The App Home tab: a person's roles (and where each comes from), their tools and their
schedules, and for an admin the channels that have settings of their own. Built and
published after the event is acknowledged."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.blocks.messages import home_view
from bot.slack.calls import safe_call
from bot.slack.inbound.after_ack import AfterAck
from permissions.policy import Person, Policy
from tools.registry import ToolRegistry


def register(
    app: AsyncApp,
    command: str,
    policy: Policy,
    registry: ToolRegistry,
    later: AfterAck,
    channels: Callable[[], Awaitable[list[str]]],
    schedules: Callable[[str, str], Awaitable[list[str]]],
) -> None:
    """``channels``: the rows of the channels with settings of their own (admins see them);
    ``schedules``: the rows of a person's own schedules (team, user)."""

    @app.event("app_home_opened")
    async def on_home_opened(
        event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
    ) -> None:
        if event.get("tab") not in (None, "home"):
            return
        # app_home_opened names no author's workspace, but the Home tab opens only in a
        # workspace the app is installed in: the event's own (users.info still decides).
        team = context.team_id or ""
        person = Person(team, event.get("user") or "", None, user_team=team)

        async def publish() -> None:
            held = [(h.role, h.source) for h in await policy.held(person)] if policy.roles else []
            tools = [
                (t.name, t.description)
                for t in await policy.visible(person, await registry.list_tools())
            ]
            own = await channels() if await policy.is_admin(person) else None
            theirs = await schedules(person.team, person.user)
            await safe_call(
                client.views_publish,
                user_id=person.user,
                view=home_view(held, tools, command, own, theirs),
            )

        later.spawn(publish(), respond=None, what="the Home tab")
