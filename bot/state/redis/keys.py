"""Every Redis key this bot writes, in one place, under one prefix.

Each key carries its shard's hash tag right after the prefix (none with one shard, the
default): see :mod:`bot.state.redis.shards` for which shard each key belongs to and why.
"""

from __future__ import annotations

import hashlib

from bot.state.redis.shards import Shards
from bot.state.redis.thread_key import ThreadKey

SCHEDULES_SHARD = 0  # the shard of every schedule's keys (and of their audit entries)


class Keys:
    def __init__(self, prefix: str, shards: Shards | None = None) -> None:
        self.prefix = prefix
        self.shards = shards or Shards()
        self.workers = "workers"  # each turn stream's consumer group
        self.switches = f"{prefix}switches"  # one key, read and written alone

    # --- the shards ------------------------------------------------------------------

    def _in(self, shard: int) -> str:
        return self.prefix + self.shards.tag(shard)

    def _thread(self, thread: ThreadKey) -> str:
        return self._in(self.shards.of(thread))

    def _team(self, team: str) -> str:
        return self._in(self.team_shard(team))

    def _of_id(self, qualified_id: str) -> str:
        return self._in(self.shards.of_id(qualified_id))

    # --- kept once per shard (readers merge the shards) ---------------------------------

    def turns(self, shard: int) -> str:
        """The shard's stream of accepted turns."""
        return f"{self._in(shard)}turns"

    def dead_turns(self, shard: int) -> str:
        """The shard's turns that failed every attempt."""
        return f"{self._in(shard)}turns:dead"

    def notices(self, shard: int) -> str:
        """Plain messages owed to people, by due time."""
        return f"{self._in(shard)}notices"

    def notice_data(self, shard: int) -> str:
        return f"{self._in(shard)}notices:data"

    def audit(self, shard: int) -> str:
        return f"{self._in(shard)}audit"

    def approval_deadlines(self, shard: int) -> str:
        """The shard's open approval requests by deadline (request id -> deadline): the
        workers look here about once a second for requests to expire."""
        return f"{self._in(shard)}approvals:deadlines"

    def usage(self, shard: int, team: str, user: str, day: str) -> str:
        return f"{self.usage_prefix(shard, team)}{day}:{user}"

    def usage_prefix(self, shard: int, team: str) -> str:
        """What every usage key of the team in the shard starts with (then the day, ':',
        the user)."""
        return f"{self._in(shard)}usage:{team}:"

    def usage_users(self, shard: int, team: str, day: str) -> str:
        return f"{self._in(shard)}usage:{team}:{day}"

    # --- a thread's --------------------------------------------------------------------

    def history(self, thread: ThreadKey) -> str:
        return f"{self._thread(thread)}history:{thread}"

    def history_bytes(self, thread: ThreadKey) -> str:
        return f"{self._thread(thread)}history:{thread}:bytes"

    def thread_queue(self, thread: ThreadKey) -> str:
        """Entry ids of the thread's unfinished turns, scored by their Slack message ts."""
        return f"{self._thread(thread)}thread:{thread}:queue"

    def thread_current(self, thread: ThreadKey) -> str:
        """The entry id of the thread's turn that has started and is not finished."""
        return f"{self._thread(thread)}thread:{thread}:current"

    def participation(self, thread: ThreadKey) -> str:
        return f"{self._thread(thread)}joined:{thread}"

    def greeted(self, thread: ThreadKey) -> str:
        return f"{self._thread(thread)}pane:{thread}:greeted"

    def pane_context(self, thread: ThreadKey) -> str:
        return f"{self._thread(thread)}pane:{thread}:context"

    def stop(self, thread: ThreadKey) -> str:
        return f"{self._thread(thread)}stop:{thread}"

    def stopped_stream(self, thread: ThreadKey, ts: str) -> str:
        """A streamed message of the thread that the person stopped in Slack."""
        return f"{self._thread(thread)}stopped-stream:{thread.channel}:{ts}"

    def lock(self, thread: ThreadKey) -> str:
        return f"{self._thread(thread)}lock:{thread}"

    def seen_event(self, thread: ThreadKey, team: str, event_id: str) -> str:
        """An event already queued (kept in the shard of the thread it was for)."""
        return f"{self._thread(thread)}seen:event:{team}:{event_id}"

    def seen_message(self, thread: ThreadKey, team: str, channel: str, ts: str) -> str:
        return f"{self._thread(thread)}seen:message:{team}:{channel}:{ts}"

    def asides(self, thread: ThreadKey) -> str:
        """Replies in a thread the bot is in that it heard but did not answer, by ts."""
        return f"{self._thread(thread)}thread:{thread}:asides"

    def asides_taken(self, thread: ThreadKey) -> str:
        """Which turn last took the thread's asides, and the window it took."""
        return f"{self._thread(thread)}thread:{thread}:asides-taken"

    def waiting_note(self, thread: ThreadKey, wait: str) -> str:
        """The note that the thread waits for a decision on an approval card (``wait``:
        the card), posted once: "posting", then "posted"."""
        return f"{self._thread(thread)}thread:{thread}:waiting-note:{wait}"

    # --- a turn's (its entry id names its shard: the thread's) --------------------------

    def turn(self, entry_id: str) -> str:
        """The turn's record: its state, round, attempts, what to show, the delivery."""
        return f"{self.turn_prefix(self.shards.of_id(entry_id))}{entry_id}"

    def turn_prefix(self, shard: int) -> str:
        """What the records of the shard's turns start with (then the entry id)."""
        return f"{self._in(shard)}turn:"

    def journal(self, entry_id: str) -> str:
        return f"{self._of_id(entry_id)}turn:{entry_id}:journal"

    def reruns(self, entry_id: str) -> str:
        """Tool calls of the turn that were run again after a crash."""
        return f"{self._of_id(entry_id)}turn:{entry_id}:reruns"

    def turn_approvals(self, entry_id: str) -> str:
        """The turn's approval requests: call id -> request id (a sign-in's field:
        ``signin:<call id>:<n>``)."""
        return f"{self._of_id(entry_id)}turn:{entry_id}:approvals"

    def approval(self, request_id: str) -> str:
        """One call waiting for a person's approval (and, once decided, the decision); the
        request's id names its turn's shard."""
        return f"{self.approval_prefix(self.shards.of_id(request_id))}{request_id}"

    def approval_prefix(self, shard: int) -> str:
        """What the keys of the shard's approval requests start with (then the request id)."""
        return f"{self._in(shard)}approval:"

    # --- a team's ----------------------------------------------------------------------

    def feedback(self, team: str) -> str:
        return f"{self._team(team)}feedback:{team}"

    def feedback_day(self, team: str, day: str) -> str:
        return f"{self._team(team)}feedback:{team}:{day}"

    def feedback_votes(self, team: str, channel: str, message_ts: str) -> str:
        """Each person's current vote on one answer: user -> "day verdict"."""
        return f"{self._team(team)}feedback:{team}:votes:{channel}:{message_ts}"

    def roles(self, team: str, user: str, external: bool) -> str:
        """A person's resolved roles, kept briefly (``external``: as from elsewhere)."""
        return f"{self._team(team)}cache:roles:{team}:{user}" + (":external" if external else "")

    def roles_generation(self, team: str, user: str) -> str:
        """Moved on by every grant, revoke and forget of the person's roles."""
        return f"{self._team(team)}roles-generation:{team}:{user}"

    def grants(self, team: str, user: str) -> str:
        return f"{self._team(team)}grants:{team}:{user}"

    def granted_users(self, team: str) -> str:
        return f"{self._team(team)}grants:{team}"

    def budget(self, team: str, day: str, counter: str) -> str:
        """One spending counter (``user:U1``, ``workspace``, ``channel:C1``) on one budget
        day: settled tokens and cost, and the holds of calls under way
        (bot/budget/ledger.py)."""
        return f"{self._team(team)}budget:{team}:{day}:{counter}"

    def open_approvals(self, team: str, user: str) -> str:
        """The approval requests a person's turns have waiting for a decision: request id,
        scored by its deadline."""
        return f"{self._team(team)}approvals:open:{team}:{user}"

    # --- a channel's settings set in Slack, and a memory's notes (bot/state/channel_*.py) --
    # Keyed by the channel ID alone (unique across workspaces, one ID for both sides of a
    # Slack Connect channel) in the channel's shard; a memory by its scope (a channel ID, or
    # ``user:<U…>`` for a person's DMs) in the scope's shard.

    def channel_shard(self, channel_or_scope: str) -> int:
        """The shard of a channel's settings, or of a memory's notes (and of the audit
        entries written beside them)."""
        return self.shards.of(channel_or_scope)

    def channel_settings(self, channel: str) -> str:
        """The values set in Slack for one channel: key -> JSON {value, by, at}."""
        return f"{self._in(self.channel_shard(channel))}channel:{channel}:settings"

    def channels_set_in_slack(self, shard: int) -> str:
        """The shard's channels with any value set in Slack (readers merge the shards)."""
        return f"{self._in(shard)}channels:set-in-slack"

    def memory(self, scope: str) -> str:
        """A memory's notes: note id (``n<k>``) -> JSON {text, by, at, channel}."""
        return f"{self._in(self.channel_shard(scope))}memory:{scope}"

    def memory_sequence(self, scope: str) -> str:
        """The last note number given in a memory (never reset, so an id is never reused)."""
        return f"{self._in(self.channel_shard(scope))}memory:{scope}:seq"

    def memory_saved(self, scope: str, key: str) -> str:
        """The note saved under one idempotency key (a turn's call): saved once."""
        return f"{self._in(self.channel_shard(scope))}memory:{scope}:saved:{key}"

    # --- a person's connections to MCP servers (bot/oauth/), in the team's shard --------

    def oauth_token(self, team: str, user: str, server: str, iss8: str) -> str:
        """A person's sealed token for one server and issuer (``iss8``: :func:`issuer_id`),
        with its version and expiry in plain."""
        return f"{self._team(team)}oauth:token:{team}:{user}:{server}:{iss8}"

    def oauth_version(self, team: str, user: str, server: str) -> str:
        """The last version written of a person's token for a server, whichever its issuer;
        kept when the connection is forgotten, so that a version is never written twice (a
        process still holding a forgotten token never takes a newer one for it)."""
        return f"{self._team(team)}oauth:ver:{team}:{user}:{server}"

    def oauth_conns(self, team: str, user: str) -> str:
        """A person's connections: server -> which issuer, since when, what scope (no
        secret)."""
        return f"{self._team(team)}oauth:conns:{team}:{user}"

    def oauth_team_conns(self, team: str) -> str:
        """Everyone's connections in the team: ``<user>/<server>`` -> issuer, since."""
        return f"{self._team(team)}oauth:team-conns:{team}"

    def oauth_refresh(self, team: str, user: str, server: str, iss8: str) -> str:
        """The lock one process holds while it refreshes the token (across replicas)."""
        return f"{self._team(team)}oauth:refresh:{team}:{user}:{server}:{iss8}"

    def oauth_waiting(self, team: str, user: str, server: str) -> str:
        """The sign-in requests waiting on a person's connection to a server."""
        return f"{self._team(team)}oauth:waiting:{team}:{user}:{server}"

    def team_shard(self, team: str) -> int:
        """The shard of the team's keys (and of the audit entries written beside them)."""
        return self.shards.of(team)

    # --- schedules (bot/state/schedules.py), every one in SCHEDULES_SHARD ---------------
    # Schedules are few, so they all share one shard: one Lua step touches a schedule, its
    # owner's index, the due index and that shard's audit stream.

    def _schedules(self) -> str:
        return self._in(SCHEDULES_SHARD)

    def schedule(self, schedule_id: str) -> str:
        """One schedule: its owner, channel, prompt, recurrence, state, next and last run."""
        return f"{self.schedule_prefix()}{schedule_id}"

    def schedule_prefix(self) -> str:
        """What a schedule's key starts with (then its id)."""
        return f"{self._schedules()}schedule:"

    def schedules_due(self) -> str:
        """The active schedules by when to look at them next: id -> epoch seconds (the next
        run, or the end of the lease of a run being fired or waiting to be tried again)."""
        return f"{self._schedules()}schedules:due"

    def schedules_of_owner(self, team: str, user: str) -> str:
        """The ids of a person's schedules."""
        return f"{self.schedules_of_owner_prefix()}{team}:{user}"

    def schedules_of_owner_prefix(self) -> str:
        """What a person's index of schedules starts with (then ``<team>:<user>``)."""
        return f"{self._schedules()}schedules:owner:"

    def schedules_all(self) -> str:
        """Every schedule's id, in every team."""
        return f"{self._schedules()}schedules:all"

    def schedules_sequence(self) -> str:
        """The last schedule number given (ids ``s1``, ``s2``… are never reused)."""
        return f"{self._schedules()}schedules:seq"

    def schedule_firing(self, schedule_id: str, occurrence: str) -> str:
        """The firing of one occurrence (``occurrence``: its epoch seconds as text): who
        holds it until when, and its headline's ts once posted."""
        return f"{self._schedules()}schedule:fire:{schedule_id}:{occurrence}"

    # --- alone -------------------------------------------------------------------------

    def cache(self, key: str) -> str:
        return f"{self.prefix}cache:{key}"

    def signed_request(self, timestamp: str, signature: str) -> str:
        """A signed slash command or interaction already accepted (its Slack timestamp and
        signature), kept while Slack's signature on it would still be valid."""
        return f"{self._in(self.shards.of(signature))}seen:request:{timestamp}:{signature}"

    def elicitation(self, question_id: str) -> str:
        """A question an MCP server asks a person (bot/turn/store/elicitations.py)."""
        return f"{self._in(self.shards.of(question_id))}elicitation:{question_id}"

    def elicitation_answer(self, question_id: str) -> str:
        return f"{self._in(self.shards.of(question_id))}elicitation:{question_id}:answer"

    def oauth_flow(self, state: str) -> str:
        """A sign-in under way, found by its OAuth ``state`` (which names its shard:
        ``Shards.qualify``), keyed by the state's SHA-256, never the state itself."""
        digest = hashlib.sha256(state.encode()).hexdigest()
        return f"{self._in(self.shards.of_id(state))}oauth:flow:{digest}"

    def oauth_client(self, server: str, redirect_uri: str) -> str:
        """A server's sealed client registration (dynamic registration) for one redirect
        URI, in the server's shard."""
        digest = hashlib.sha256(redirect_uri.encode()).hexdigest()[:16]
        return f"{self._in(self.shards.of(server))}oauth:client:{server}:{digest}"


def issuer_id(issuer: str) -> str:
    """The short name of an authorization server in key names: the first 16 hex characters
    of its URL's SHA-256."""
    return hashlib.sha256(issuer.encode()).hexdigest()[:16]
