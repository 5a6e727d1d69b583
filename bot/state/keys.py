"""Every Redis key this bot writes, in one place, under one prefix."""

from __future__ import annotations

from bot.turn.model import ThreadKey


class Keys:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.turns = f"{prefix}turns"  # the stream of accepted turns
        self.dead_turns = f"{prefix}turns:dead"  # turns that failed every attempt
        self.workers = "workers"  # the stream's consumer group
        self.notices = f"{prefix}notices"  # plain messages owed to people, by due time
        self.notice_data = f"{prefix}notices:data"
        self.switches = f"{prefix}switches"
        self.audit = f"{prefix}audit"

    def history(self, thread: ThreadKey) -> str:
        return f"{self.prefix}history:{thread}"

    def history_bytes(self, thread: ThreadKey) -> str:
        return f"{self.prefix}history:{thread}:bytes"

    def thread_queue(self, thread: ThreadKey) -> str:
        """Entry ids of the thread's unfinished turns, scored by their Slack message ts."""
        return f"{self.prefix}thread:{thread}:queue"

    def thread_current(self, thread: ThreadKey) -> str:
        """The entry id of the thread's turn that has started and is not finished."""
        return f"{self.prefix}thread:{thread}:current"

    def participation(self, thread: ThreadKey) -> str:
        return f"{self.prefix}joined:{thread}"

    def feedback(self, team: str) -> str:
        return f"{self.prefix}feedback:{team}"

    def feedback_day(self, team: str, day: str) -> str:
        return f"{self.prefix}feedback:{team}:{day}"

    def feedback_votes(self, team: str, channel: str, message_ts: str) -> str:
        """Each person's current vote on one answer: user -> "day verdict"."""
        return f"{self.prefix}feedback:{team}:votes:{channel}:{message_ts}"

    def greeted(self, thread: ThreadKey) -> str:
        return f"{self.prefix}pane:{thread}:greeted"

    def pane_context(self, thread: ThreadKey) -> str:
        return f"{self.prefix}pane:{thread}:context"

    def cache(self, key: str) -> str:
        return f"{self.prefix}cache:{key}"

    def roles(self, team: str, user: str, external: bool) -> str:
        """A person's resolved roles, kept briefly (``external``: as from elsewhere)."""
        return self.cache(f"roles:{team}:{user}" + (":external" if external else ""))

    def roles_generation(self, team: str, user: str) -> str:
        """Moved on by every grant, revoke and forget of the person's roles."""
        return f"{self.prefix}roles-generation:{team}:{user}"

    def stop(self, thread: ThreadKey) -> str:
        return f"{self.prefix}stop:{thread}"

    def stopped_stream(self, channel: str, ts: str) -> str:
        return f"{self.prefix}stopped-stream:{channel}:{ts}"

    def elicitation(self, question_id: str) -> str:
        """A question an MCP server asks a person (bot/state/elicitations.py)."""
        return f"{self.prefix}elicitation:{question_id}"

    def elicitation_answer(self, question_id: str) -> str:
        return f"{self.prefix}elicitation:{question_id}:answer"

    def lock(self, thread: ThreadKey) -> str:
        return f"{self.prefix}lock:{thread}"

    def seen_event(self, team: str, event_id: str) -> str:
        return f"{self.prefix}seen:event:{team}:{event_id}"

    def seen_message(self, team: str, channel: str, ts: str) -> str:
        return f"{self.prefix}seen:message:{team}:{channel}:{ts}"

    def turn(self, entry_id: str) -> str:
        """The turn's record: its state, round, attempts, what to show, the delivery."""
        return f"{self.prefix}turn:{entry_id}"

    def journal(self, entry_id: str) -> str:
        return f"{self.prefix}turn:{entry_id}:journal"

    def reruns(self, entry_id: str) -> str:
        """Tool calls of the turn that were run again after a crash."""
        return f"{self.prefix}turn:{entry_id}:reruns"

    def approval(self, request_id: str) -> str:
        """One call waiting for a person's approval (and, once decided, the decision)."""
        return f"{self.prefix}approval:{request_id}"

    def turn_approvals(self, entry_id: str) -> str:
        """The turn's approval requests: call id -> request id."""
        return f"{self.prefix}turn:{entry_id}:approvals"

    def grants(self, team: str, user: str) -> str:
        return f"{self.prefix}grants:{team}:{user}"

    def granted_users(self, team: str) -> str:
        return f"{self.prefix}grants:{team}"

    def usage(self, team: str, user: str, day: str) -> str:
        return f"{self.usage_prefix(team)}{day}:{user}"

    def usage_prefix(self, team: str) -> str:
        """What every usage key of the team starts with (then the day, ':', the user)."""
        return f"{self.prefix}usage:{team}:"

    def usage_users(self, team: str, day: str) -> str:
        return f"{self.prefix}usage:{team}:{day}"

    def budget(self, team: str, day: str, counter: str) -> str:
        """One spending counter (``user:U1``, ``workspace``) on one budget day: settled tokens
        and cost, and the holds of calls under way (bot/budget/ledger.py)."""
        return f"{self.prefix}budget:{team}:{day}:{counter}"

    def asides(self, thread: ThreadKey) -> str:
        """Replies in a thread the bot is in that it heard but did not answer, by ts."""
        return f"{self.prefix}thread:{thread}:asides"

    def asides_taken(self, thread: ThreadKey) -> str:
        """Which turn last took the thread's asides, and the window it took."""
        return f"{self.prefix}thread:{thread}:asides-taken"
