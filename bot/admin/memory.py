"""``/agent memory`` and ``/agent forget``: the notes saved where the command is typed (a
channel's, or in a direct message the person's own), and removing them: one note by its
author or an admin, all of a channel's by an admin, all of one's own DM notes by oneself.
Removals are audited by :class:`ChannelMemory`; refusals here."""

from __future__ import annotations

from bot.admin.context import AdminStores, Caller, admin_entry
from bot.admin.parsing import Invocation
from bot.admin.reports import when
from bot.slack.blocks.limits import MESSAGE_TEXT_CHARS, limited, shorten
from bot.state.channel_memory import memory_scope
from permissions.policy import Policy

NOTE_SHOWN = 300  # characters of a note the list shows


class MemoryCommands:
    def __init__(self, command: str, policy: Policy, state: AdminStores) -> None:
        self.command = command
        self.policy = policy
        self.state = state

    async def notes(self, caller: Caller, invocation: Invocation) -> str:
        if invocation.args:
            return f"`{self.command} memory` takes no arguments."
        if caller.channel is None:
            return f"`{self.command} memory` lists the notes of the channel it is typed in."
        dm = caller.channel.startswith("D")
        found = await self.state.memory.notes(memory_scope(caller.channel, caller.user))
        where = "your memory" if dm else "this channel's memory"
        if not found:
            return f"Nothing is saved in {where}."
        rows = [
            f"• `{note.id}` — “{shorten(' '.join(note.text.split()), NOTE_SHOWN)}” — "
            f"<@{note.by}>, {when(note.at)}"
            for note in found
        ]
        head = f"*{where[0].upper()}{where[1:]}* ({_count(len(found))}, newest first; "
        head += f"`{self.command} forget <id>` removes one):"
        return "\n".join([head, *limited(rows, MESSAGE_TEXT_CHARS - len(head) - 1)])

    async def forget(self, caller: Caller, invocation: Invocation) -> str:
        usage = f"Usage: `{self.command} forget <id>` or `{self.command} forget all`"
        if len(invocation.args) != 1:
            return usage
        if caller.channel is None:
            return f"`{self.command} forget` removes notes of the channel it is typed in."
        dm = caller.channel.startswith("D")
        scope = memory_scope(caller.channel, caller.user)
        which = invocation.args[0].strip("`")
        if which.lower() == "all":
            if not dm and not await self.policy.is_admin(caller.person):
                return await self._refused(
                    caller, invocation, "Sorry, only admins can empty this channel's memory."
                )
            count = await self.state.memory.clear(caller.team, scope, by=caller.user)
            where = "your memory" if dm else "this channel's memory"
            return (
                f"Emptied {where}: {_count(count)} forgotten."
                if count
                else f"{where.capitalize()} was already empty."
            )
        note = next((n for n in await self.state.memory.notes(scope) if n.id == which), None)
        if note is None:
            return f"There is no note `{which}` here. `{self.command} memory` lists them."
        if note.by != caller.user and not await self.policy.is_admin(caller.person):
            return await self._refused(
                caller,
                invocation,
                f"Sorry, only <@{note.by}>, who saved note `{note.id}`, or an admin can forget it.",
            )
        removed = await self.state.memory.remove(caller.team, scope, note.id, by=caller.user)
        if removed is None:  # removed by someone else meanwhile
            return f"There is no note `{which}` here. `{self.command} memory` lists them."
        return f"Forgot note `{removed.id}`: “{shorten(removed.text, NOTE_SHOWN)}”"

    async def _refused(self, caller: Caller, invocation: Invocation, said: str) -> str:
        await self.state.audit.add(admin_entry(caller, invocation, outcome="refused"))
        return said


def _count(n: int) -> str:
    return f"{n} note" if n == 1 else f"{n} notes"
