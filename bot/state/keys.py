"""Every Redis key this bot writes, in one place, under one prefix."""

from __future__ import annotations

from bot.turn import ThreadKey


class Keys:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.turns = f"{prefix}turns"  # the stream of accepted turns
        self.dead_turns = f"{prefix}turns:dead"  # turns that failed every attempt
        self.workers = "workers"  # the stream's consumer group
        self.switches = f"{prefix}switches"
        self.audit = f"{prefix}audit"

    def history(self, thread: ThreadKey) -> str:
        return f"{self.prefix}history:{thread}"

    def history_bytes(self, thread: ThreadKey) -> str:
        return f"{self.prefix}history:{thread}:bytes"

    def thread_pending(self, thread: ThreadKey) -> str:
        """Entry ids of the thread's turns, in arrival order, until each is finished."""
        return f"{self.prefix}thread:{thread}:pending"

    def participation(self, thread: ThreadKey) -> str:
        return f"{self.prefix}joined:{thread}"

    def cache(self, key: str) -> str:
        return f"{self.prefix}cache:{key}"

    def stop(self, thread: ThreadKey) -> str:
        return f"{self.prefix}stop:{thread}"

    def lock(self, thread: ThreadKey) -> str:
        return f"{self.prefix}lock:{thread}"

    def seen_event(self, team: str, event_id: str) -> str:
        return f"{self.prefix}seen:event:{team}:{event_id}"

    def seen_message(self, team: str, channel: str, ts: str) -> str:
        return f"{self.prefix}seen:message:{team}:{channel}:{ts}"

    def turn_state(self, entry_id: str) -> str:
        return f"{self.prefix}turn:{entry_id}"

    def journal(self, entry_id: str) -> str:
        return f"{self.prefix}turn:{entry_id}:journal"

    def grants(self, team: str, user: str) -> str:
        return f"{self.prefix}grants:{team}:{user}"

    def granted_users(self, team: str) -> str:
        return f"{self.prefix}grants:{team}"

    def usage(self, team: str, user: str, day: str) -> str:
        return f"{self.prefix}usage:{team}:{day}:{user}"

    def usage_users(self, team: str, day: str) -> str:
        return f"{self.prefix}usage:{team}:{day}"
