"""Firing one occurrence of a schedule, exactly once, on whichever replica gets there first.

1. Claim the occurrence (one Lua step, on Redis's clock: the schedule is active, its next
   run is this one and due, no other holder's lease is live) for ``LEASE_S``; the attempt
   is counted and the schedule's score in the due index becomes the lease's end, so the
   schedulers pass over it meanwhile. From here the claim's moment (Redis's clock) is now.
2. Catch up (:func:`catch_up`, pure): the latest occurrence due runs once if it is at most
   ``schedules.catch_up_s`` late, the ones before it are counted as missed; older than
   that, none runs and all are counted, carried to the next run's message. Decided from
   the moment the occurrence was first claimed; but when that is over ``catch_up_s`` ago
   and no headline ts is recorded, the first decision's headline is looked for and, none
   found, the decision is made again from now.
3. The owner left the workspace, or the schedule's channel: pause the schedule (audited),
   stop.
4. The headline: the ts the firing record holds, else (when a holder had it before, or the
   run is over ``SEARCH_AFTER_S`` past: a record Redis lost) the post tagged with this run
   found in the channel, else a new post; its ts (and the moment decided from) recorded
   while the holder still holds the occurrence. Slack refusing the channel for good
   (:class:`ChannelRefused`) pauses the schedule (audited).
5. The run's turn, queued: the queue's dedup on the message ts (the headline's) makes a
   second enqueue of the same run a no-op.
6. Advance the schedule past the occurrence (compare-and-set on its next run, while the
   lease is live): its next run, its last, what it missed; a one-off ends.

A holder that dies between two steps leaves a lease that lapses; the next claimer resumes
from the firing record, and every holder decides what to run from the moment the record
keeps, so all decide alike. Slack calls that fail end the attempt (:class:`Failed`) for
another try when the lease lapses, up to ``MAX_ATTEMPTS`` claims and while the next try
would be at most ``catch_up_s`` late; then the run is skipped as missed, its outcome
"failed: <reason>" (audited). Redis failures raise (``StateUnavailable``) for the scheduler
to ride out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from bot.schedules.catch_up import catch_up, next_after, passed_between
from bot.schedules.config import SchedulesConfig
from bot.state.schedules import Firing, Schedule, ScheduleStore, epoch_text
from bot.turn.model import Turn, TurnKind

LEASE_S = 30.0  # how long a claim keeps other replicas off an occurrence
OWNER_GONE = "owner left the workspace"
OWNER_LEFT_CHANNEL = "owner_left_channel"  # the audit action: the owner left the channel
CHANNEL_REFUSED = "channel_refused"  # the audit action: Slack refuses the channel for good
MAX_ATTEMPTS = 5  # an occurrence's claims before a run that keeps failing is skipped
SEARCH_AFTER_S = 2.0  # a run this far past looks for its headline before posting one
QUEUED = "queued"  # a run's outcome until its turn ends (ScheduleStore.record_outcome)
SKIPPED = "skipped"  # an occurrence passed over: too late to run


class ChannelRefused(Exception):
    """Slack refuses for good: the bot cannot post or read in the schedule's channel
    (``reason``: Slack's error word, such as ``not_in_channel``). Raised by
    :class:`Headlines`; the schedule pauses, as trying again would not help."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Headlines(Protocol):
    """A run's top-level message in the schedule's channel, tagged with the schedule and the
    run (message metadata), under which the answer is posted."""

    async def find(self, schedule: Schedule, occurrence: float) -> str | None:
        """The ts of the headline already posted for this run, if any."""
        ...

    async def post(self, schedule: Schedule, occurrence: float, missed: int) -> str:
        """Post the headline (saying how many earlier runs were missed); its ts. Raises on
        failure."""
        ...


class Owners(Protocol):
    async def gone(self, team: str, user: str) -> bool:
        """The person has left the workspace (users.info ``deleted``)."""
        ...

    async def in_channel(self, team: str, user: str, channel: str) -> bool:
        """The person is a member of ``channel`` (True when it cannot tell)."""
        ...


Enqueue = Callable[[Turn], Awaitable[str | None]]  # TurnQueue.enqueue: entry id, None: dup


@dataclass(frozen=True)
class Fired:
    """The run's turn is queued (``entry_id`` None: it was already) under headline ``ts``;
    ``skipped``: occurrences passed over without a run; ``late_s``: how late it fired."""

    ts: str
    entry_id: str | None
    skipped: int
    late_s: float


@dataclass(frozen=True)
class Skipped:
    """No run: every occurrence due was too late, or (``reason``) the run kept failing;
    ``missed`` of them, now carried."""

    missed: int
    reason: str = ""


@dataclass(frozen=True)
class Paused:
    reason: str


@dataclass(frozen=True)
class NotMine:
    """Another holder has the occurrence, took it over, or the schedule moved on."""


@dataclass(frozen=True)
class Failed:
    """A Slack call failed; the occurrence is tried again when the lease lapses (up to
    ``MAX_ATTEMPTS`` claims, while the run is at most ``catch_up_s`` late)."""

    reason: str


FireOutcome = Fired | Skipped | Paused | NotMine | Failed


def owner_left(channel: str) -> str:
    """Why a schedule paused when its owner is no longer in its channel."""
    return f"owner is no longer in <#{channel}>"


def channel_refused(channel: str, reason: str) -> str:
    """Why a schedule paused when Slack refuses its channel for good."""
    return f"the bot cannot post in <#{channel}>: {reason}"


def scheduled_turn(schedule: Schedule, run: float, ts: str, now: float) -> Turn:
    """The run's turn: the owner asks the prompt in the headline's thread."""
    return Turn(
        team=schedule.team,
        channel=schedule.channel,
        thread_ts=ts,
        user=schedule.owner,
        text=schedule.prompt,
        message_ts=ts,
        event_id=f"schedule:{schedule.id}:{epoch_text(run)}",
        kind=TurnKind.SCHEDULED,
        received_at=now,
    )


async def fire(
    store: ScheduleStore,
    headlines: Headlines,
    owners: Owners,
    enqueue: Enqueue,
    schedule_id: str,
    occurrence: float,
    *,
    now: float,
    holder: str,
    config: SchedulesConfig,
    lease_s: float = LEASE_S,
) -> FireOutcome:
    """Fire the schedule's occurrence (its next run, due) once: see the module's steps.
    ``now``: when the caller saw it due (not yet due by it: nothing is claimed); once
    claimed, the store's clock at the claim decides."""
    if occurrence > now:
        return NotMine()
    firing = await store.claim(schedule_id, occurrence, holder, lease_s)
    if firing is None:
        return NotMine()
    now = firing.claimed_at
    schedule = firing.schedule
    recurrence = schedule.recurrence
    decided_at = firing.first_claimed_at
    decided = catch_up(recurrence, occurrence, decided_at, config.catch_up_s)
    found: str | None = None
    if not firing.ts and now - decided_at > config.catch_up_s and decided.run is not None:
        # The first claim's decision is stale, unless its run's headline went out.
        looked = await _search(store, headlines, schedule, decided.run)
        if isinstance(looked, Failed):
            missed = decided.skipped + passed_between(recurrence, decided_at, now)
            return await _failed(store, firing, looked, decided.run, missed, now, config, lease_s)
        if isinstance(looked, Paused):
            return looked
        found = looked
        if found is None:
            decided_at = now
            decided = catch_up(recurrence, occurrence, now, config.catch_up_s)
    since_decided = passed_between(recurrence, decided_at, now)
    if decided.run is None:
        missed = decided.skipped + since_decided
        advanced = await store.advance(
            firing,
            ran=None,
            next_at=next_after(recurrence, now),
            missed=schedule.missed + missed,
            outcome=SKIPPED,
        )
        return Skipped(missed) if advanced else NotMine()

    run = decided.run
    try:
        left = await _owner_left(owners, schedule)
    except Exception as exc:
        failed = Failed(f"looking up the owner failed: {_described(exc)}")
        return await _failed(
            store, firing, failed, run, decided.skipped + since_decided, now, config, lease_s
        )
    if left is not None:
        reason, action = left
        await store.pause(schedule.id, schedule.owner, reason, action=action)
        return Paused(reason)

    missed_before = schedule.missed + decided.skipped
    ts = await _headline(store, headlines, firing, run, missed_before, now, decided_at, found)
    if isinstance(ts, Failed):
        return await _failed(
            store, firing, ts, run, decided.skipped + since_decided, now, config, lease_s
        )
    if not isinstance(ts, str):
        return ts
    entry_id = await enqueue(scheduled_turn(schedule, run, ts, now))
    advanced = await store.advance(  # the runs after L that passed meanwhile are carried
        firing,
        ran=run,
        next_at=next_after(recurrence, max(now, run)),
        missed=since_decided,
        outcome=QUEUED,
    )
    if not advanced:
        return NotMine()
    return Fired(ts, entry_id, decided.skipped + since_decided, max(now - run, 0.0))


FireOne = Callable[[str, float, float], Awaitable[FireOutcome]]  # (id, occurrence, now)


def firing_with(
    store: ScheduleStore,
    headlines: Headlines,
    owners: Owners,
    enqueue: Enqueue,
    *,
    holder: str,
    config: SchedulesConfig,
) -> FireOne:
    """:func:`fire` bound to one process's ports and holder name, for its scheduler."""

    async def fire_one(schedule_id: str, occurrence: float, now: float) -> FireOutcome:
        return await fire(
            store,
            headlines,
            owners,
            enqueue,
            schedule_id,
            occurrence,
            now=now,
            holder=holder,
            config=config,
        )

    return fire_one


async def _headline(
    store: ScheduleStore,
    headlines: Headlines,
    firing: Firing,
    run: float,
    missed: int,
    now: float,
    decided_at: float,
    found: str | None,
) -> str | Failed | Paused | NotMine:
    """The run's headline ts (step 4): recorded, ``found`` already, looked for, or posted,
    then recorded with ``decided_at``. It is looked for when another holder had the
    occurrence, or when the run is over ``SEARCH_AFTER_S`` past (a claim whose record Redis
    lost, as a restart may lose its last second, finds the post it made)."""
    if firing.ts:
        return firing.ts
    schedule = firing.schedule
    ts = found
    if ts is None and (firing.taken_over or now - run > SEARCH_AFTER_S):
        looked = await _search(store, headlines, schedule, run)
        if not isinstance(looked, str | None):
            return looked
        ts = looked
    if ts is None:
        try:
            ts = await headlines.post(schedule, run, missed)
        except ChannelRefused as refused:
            return await _refused(store, schedule, refused)
        except Exception as exc:
            return Failed(f"posting the headline failed: {_described(exc)}")
    if not await store.record_headline(firing, ts, decided_at):
        return NotMine()
    return ts


async def _search(
    store: ScheduleStore, headlines: Headlines, schedule: Schedule, run: float
) -> str | Failed | Paused | None:
    """The ts of the run's headline already posted, if any."""
    try:
        return await headlines.find(schedule, run)
    except ChannelRefused as refused:
        return await _refused(store, schedule, refused)
    except Exception as exc:
        return Failed(f"looking for the headline failed: {_described(exc)}")


async def _refused(store: ScheduleStore, schedule: Schedule, refused: ChannelRefused) -> Paused:
    """Slack refuses the schedule's channel for good: the schedule pauses, audited."""
    reason = channel_refused(schedule.channel, refused.reason)
    await store.pause(schedule.id, schedule.owner, reason, action=CHANNEL_REFUSED)
    return Paused(reason)


async def _owner_left(owners: Owners, schedule: Schedule) -> tuple[str, str] | None:
    """Why the schedule pauses, and the audit action, when its owner left the workspace or
    its channel (step 2); None: they are still there."""
    if await owners.gone(schedule.team, schedule.owner):
        return OWNER_GONE, "owner_gone"
    if not await owners.in_channel(schedule.team, schedule.owner, schedule.channel):
        return owner_left(schedule.channel), OWNER_LEFT_CHANNEL
    return None


async def _failed(
    store: ScheduleStore,
    firing: Firing,
    failed: Failed,
    run: float,
    missed: int,
    now: float,
    config: SchedulesConfig,
    lease_s: float,
) -> Failed | Skipped | NotMine:
    """An attempt at ``run`` failed: tried again once the lease lapses, unless this was the
    ``MAX_ATTEMPTS``-th or the run would be over ``catch_up_s`` late by then. Then the run
    is skipped as missed (with the ``missed`` before and after it), its outcome the
    failure."""
    if firing.attempts < MAX_ATTEMPTS and now + lease_s - run <= config.catch_up_s:
        return failed
    schedule = firing.schedule
    advanced = await store.advance(
        firing,
        ran=None,
        next_at=next_after(schedule.recurrence, max(now, run)),
        missed=schedule.missed + missed + 1,
        outcome=f"failed: {failed.reason}",
    )
    return Skipped(missed + 1, failed.reason) if advanced else NotMine()


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
