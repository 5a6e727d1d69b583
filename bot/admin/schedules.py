"""``/agent schedules`` (one's own; ``schedules all``: everyone's, for admins), ``pause``,
``resume`` and ``unschedule <id>`` (the schedule's owner or an admin), and a person's own
schedules for the Home tab. Changes are audited by :class:`ScheduleStore`; refusals here.
A resumed schedule runs next at its first time after now; a one-off whose time has passed
cannot resume."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from bot.admin import schedule_words as words
from bot.admin.context import AdminStores, Caller, admin_entry
from bot.admin.parsing import Invocation
from bot.state.schedules import Schedule, ScheduleStore
from permissions.policy import Policy

Clock = Callable[[], float]  # epoch seconds


class ScheduleCommands:
    def __init__(
        self, command: str, policy: Policy, state: AdminStores, clock: Clock = time.time
    ) -> None:
        self.command = command
        self.policy = policy
        self.state = state
        self.clock = clock

    @property
    def store(self) -> ScheduleStore:
        return self.state.schedules

    async def own(self, caller: Caller, invocation: Invocation) -> str:
        if invocation.args:
            all_ = invocation.args[0].lower().startswith("al")
            hint = " Admins: try `schedules all`." if all_ else ""
            return f"`{self.command} schedules` takes no arguments.{hint}"
        return words.own_list(await self.store.of_owner(caller.team, caller.user), self.command)

    async def everyone(self, caller: Caller, invocation: Invocation) -> str:
        """An admin's (the caller's role is checked before)."""
        if invocation.args:
            return f"`{self.command} schedules all` takes no arguments."
        return words.everyone_list(await self.store.everyone(caller.team))

    async def pause(self, caller: Caller, invocation: Invocation) -> str:
        found = await self._theirs(caller, invocation, "pause")
        if isinstance(found, str):
            return found
        if found.state == "ended":
            return words.ended(found, self.command)
        if found.state == "paused":
            return words.already_paused(found)
        after = await self.store.pause(
            found.id, by=caller.user, reason=f"paused by <@{caller.user}>"
        )
        if after is None:  # removed meanwhile
            return words.unknown(found.id, self.command)
        if after.state == "ended":  # its one run came first
            return words.ended(after, self.command)
        return words.paused(after, self.command)

    async def resume(self, caller: Caller, invocation: Invocation) -> str:
        found = await self._theirs(caller, invocation, "resume")
        if isinstance(found, str):
            return found
        if found.state == "ended":
            return words.ended(found, self.command)
        if found.state != "paused":
            return words.not_paused(found)
        upcoming = found.recurrence.next_after(datetime.fromtimestamp(self.clock(), UTC))
        if upcoming is None:
            return words.passed(found, self.command)
        after = await self.store.resume(found.id, by=caller.user, next_at=upcoming.timestamp())
        if after is None:
            return words.unknown(found.id, self.command)
        return words.resumed(after)

    async def unschedule(self, caller: Caller, invocation: Invocation) -> str:
        found = await self._theirs(caller, invocation, "remove")
        if isinstance(found, str):
            return found
        gone = await self.store.remove(found.id, by=caller.user)
        if gone is None:
            return words.unknown(found.id, self.command)
        return words.removed(gone)

    async def home_rows(self, team: str, user: str) -> list[str]:
        """A person's own schedules, a row each, for their Home tab."""
        return words.home_rows(await self.store.of_owner(team, user))

    async def _theirs(self, caller: Caller, invocation: Invocation, verb: str) -> Schedule | str:
        """The schedule named, when the caller owns it or is an admin; else what to say (a
        refusal is audited)."""
        if len(invocation.args) != 1:
            return (
                f"Usage: `{self.command} {invocation.name} <id>` (`{self.command} schedules` "
                "lists yours with their ids)."
            )
        which = words.schedule_id(invocation.args[0])
        found = await self.store.get(which)
        if found is None or found.team != caller.team:
            return words.unknown(which, self.command)
        if found.owner != caller.user and not await self.policy.is_admin(caller.person):
            await self.state.audit.add(admin_entry(caller, invocation, outcome="refused"))
            return words.not_theirs(found, verb)
        return found
