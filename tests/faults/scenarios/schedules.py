"""Schedules (issue 34) through faults: two ``slack-agent run`` replicas on one private Redis
that keeps an append-only file, the fake Slack and the fake model, over four consecutive
minutes.

First, through the real path: Alice asks the bot on one replica, the model calls the
``schedule`` tool for a one-off 15 s ahead (``ask-tool``), and she approves the card on the
other. Then, in the store, at once, aligned so the first minute comes soon (``first``): a
one-off 15 s ahead (``ask-once``); three every-minute schedules of Alice's (``ask-every``,
``ask-paused``, ``ask-removed``); one of Bob's (``ask-role``), who holds the role
``stepper`` by an admin's ``/agent grant`` and so is offered ``sync_step``.

Redis writes its append-only file once a second (``appendfsync everysec``, set at the start),
as Redis is usually run.

1. Minute 1: every schedule runs. Then Alice pauses ``ask-paused`` (``/agent pause``) and
   unschedules ``ask-removed`` (``/agent unschedule``), and the admin revokes Bob's grant
   (``/agent revoke``).
2. Minute 2: ``ask-every`` and ``ask-role`` run; Bob is not offered ``sync_step`` any more.
   The model holds its answer to ``ask-every``'s run HOLD_S; once that request has arrived,
   the replica running the turn is SIGKILLed, and the other takes the turn over when its
   lease lapses (``queue.lock_ttl_s`` and ``claim_idle_s`` short, as in replica_kill). The
   killed replica starts again.
3. Minute 3, on both: they run again. Then the redis-server is SIGKILLed (what it had not
   written to its append-only file yet is lost) and starts again with what it had.
4. Minute 4: they run once more.

Expected: every run exactly once (one headline tagged with the run, one answer in its
thread, one model request; the run the kill cut short one more, by the replica that took it
over, and nothing left in its thread), within 5 s of its time; the paused and unscheduled
ones never again; the one-off once, then ended. The report's notes give each run's
lateness.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from datetime import UTC, datetime

from bot.schedules.recurrence import parse_recurrence
from bot.state.audit import AuditLog
from bot.state.grants import RoleGrants
from bot.state.redis.errors import StateUnavailable
from bot.state.redis.keys import Keys
from bot.state.redis.shards import Shards
from bot.state.schedules import Schedule, ScheduleStore, TooMany
from tests.fakes.slack_harness import is_approval_card
from tests.fakes.slack_server import TEAM, Message
from tests.faults.cluster import Cluster
from tests.faults.deployment import START_TIMEOUT_S
from tests.faults.invariants import Report, left_behind
from tests.faults.replicas import Replica
from tests.faults.scenarios import ClusterFactory
from tests.faults.scenarios.replica_kill import SHORT_LEASE, TAKEOVER_S
from tests.faults.schedule_model import MAKE_IT, SCHEDULE_TOOL, ScriptedModel
from tests.faults.schedule_runs import (
    NO_KILL,
    Kill,
    Made,
    Seen,
    check_runs,
    clock,
    collect,
    offered,
    requests_of,
)
from tests.faults.topology.base import REDIS_AWAY
from tests.waiting import until, until_true

ALICE, BOB, ADMIN = "U0ALICE", "U0BOB", "U0ADMIN"
CHANNEL = "C0CHAN"
TOOL_TAG = "ask-tool"  # the prompt of the one-off made through the tool
PROMPT = "say that the scheduled ask ran"
APPROVE = "approval_approve"  # the card's Approve button
STEPPER = "stepper"  # the role Bob is granted, then loses, between two runs
LOST_TOOL, KEPT_TOOL = "sync_step", "slow_step"
EVERY_MINUTE = "* * * * *"
MIN_INTERVAL_S = 60  # schedules.min_interval_s: every minute is allowed
MINUTES = 4
LEAD_S = 4.0  # the first minute is at least this far ahead when the schedules are made
ONE_OFF_S = 15.0  # the one-off's time, after the schedules are made
ANSWERED_S = 25.0  # from a run's time to its answer in the thread, at most
HOLD_S = 5.0  # the model holds its answer to the run killed mid-turn this long
REDIS_DOWN_S = 3.0
QUIET_S = 3.0  # after the last answer: a second run of it would have shown by now
# Start-up, the tool's card and click, the wait for the first minute (up to 60 s), four
# minutes of runs, and the rest.
BUDGET_S = START_TIMEOUT_S + 2 * ANSWERED_S + 60.0 + (MINUTES - 1) * 60.0 + ANSWERED_S + 30.0

CONFIG = {
    **SHORT_LEASE,
    "schedules": {"min_interval_s": MIN_INTERVAL_S},
    "slack": {"streaming": False},
    "tools": {"builtins": [SCHEDULE_TOOL]},
    "roles": {
        "admin": {"admin": True, "members": [ADMIN], "tools": ["*"]},
        STEPPER: {"tools": [KEPT_TOOL, LOST_TOOL]},
        "member": {"default": True, "tools": [KEPT_TOOL, SCHEDULE_TOOL]},
    },
}


def next_minute(moment: float) -> float:
    """The first whole minute at or after ``moment`` (epoch seconds)."""
    return float(math.ceil(moment / 60.0) * 60)


def schedule_store(cluster: Cluster) -> ScheduleStore:
    keys = Keys(cluster.config["redis"]["key_prefix"], Shards(1))
    client = cluster.client()
    return ScheduleStore(client, keys, AuditLog(client, keys))


async def make_schedule(
    store: ScheduleStore, owner: str, tag: str, *, cron: str | None = None, at: float | None = None
) -> Schedule:
    """A schedule made directly in the store, as the ``schedule`` tool makes it on approval."""
    now = datetime.now(UTC)
    recurrence = parse_recurrence(
        cron=cron,
        at=None if at is None else datetime.fromtimestamp(at, UTC).isoformat(),
        timezone="UTC",
        now=now,
        min_interval_s=MIN_INTERVAL_S,
    )
    following = recurrence.next_after(now)
    assert following is not None, recurrence
    made = await store.create(
        team=TEAM,
        owner=owner,
        channel=CHANNEL,
        prompt=f"{tag}: {PROMPT}",
        recurrence=recurrence,
        next_at=following.timestamp(),
        max_per_person=10,
        by=owner,
    )
    assert not isinstance(made, TooMany), made
    return made


class Timeline:
    """What the scenario did when, for the report's notes."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.lines: list[str] = []

    def note(self, what: str) -> None:
        self.lines.append(f"{time.monotonic() - self.began:6.1f} s  {clock(time.time())}  {what}")


async def runs_answered(
    cluster: Cluster, made: list[Made], offset: float, upto: float, timeline: Timeline
) -> bool:
    """Wait until every run due at or before ``upto`` shows its answer (at most until
    ANSWERED_S after ``upto``); False, noted, if some did not."""

    def done() -> bool:
        due = [s for s in collect(made, cluster.slack, cluster.llm, offset) if s.occurrence <= upto]
        return all(s.answers for s in due)

    try:
        await until(done, timeout=max(upto + ANSWERED_S - time.time(), 1.0))
    except AssertionError:
        timeline.note(f"the runs due by {clock(upto)} were not all answered in time")
        return False
    timeline.note(f"the runs due by {clock(upto)} are answered")
    return True


async def kill_mid_run(
    cluster: Cluster, model: ScriptedModel, minute: float, offset: float, timeline: Timeline
) -> tuple[Replica | None, Kill]:
    """Wait until the model's held request of ``minute``'s run has arrived, then SIGKILL
    the replica that made it (it waits for the answer). The replica and the kill (None and
    NO_KILL, noted, when no such request came within ANSWERED_S of the minute)."""
    try:
        await asyncio.wait_for(model.held.wait(), max(minute + ANSWERED_S - time.time(), 1.0))
    except TimeoutError:
        timeline.note(f"no model request for the run at {clock(minute)} to hold")
        return None, NO_KILL
    held = model.held_request
    assert held is not None
    [victim] = [r for r in cluster.replicas if r.llm_key == held.by]
    name = victim.name
    killed_at = await cluster.kill(victim)
    kill = Kill(name, killed_at, model.made_by(victim.llm_key, since=minute - offset))
    timeline.note(
        f"SIGKILL of {name}, {killed_at - held.at:.2f} s after its model request for the run "
        f"at {clock(minute)} arrived (the answer held {HOLD_S:.0f} s); it had made "
        f"{len(kill.requests)} model request(s) since that minute"
    )
    return victim, kill


async def kill_redis(cluster: Cluster, down_s: float) -> tuple[float, float]:
    """SIGKILL of the private redis-server (no chance to write what its append-only file
    lacks), started again on the same port and directory ``down_s`` later; return when it
    was killed and when it was back (monotonic)."""
    await asyncio.to_thread(cluster.redis.stop)
    stopped = time.monotonic()
    await asyncio.sleep(down_s)
    await asyncio.to_thread(cluster.redis.start)
    return stopped, time.monotonic()


async def made_through_the_tool(
    cluster: Cluster, store: ScheduleStore, timeline: Timeline
) -> Schedule | None:
    """Alice asks for a schedule on one replica; the model calls ``schedule``; she approves
    the card on the other; the schedule it made (None, noted: none within ANSWERED_S)."""
    first_replica, second_replica = cluster.replicas
    thread = await cluster.mention(first_replica, ALICE, MAKE_IT, CHANNEL)

    def card() -> Message | None:
        found = [m for m in cluster.slack.thread(CHANNEL, thread) if is_approval_card(m)]
        return found[0] if found else None

    try:
        await until(lambda: card() is not None, ANSWERED_S)
    except AssertionError:
        timeline.note("no approval card for the schedule tool's call")
        return None
    shown = card()
    assert shown is not None
    status = await cluster.click(
        second_replica, ALICE, shown, APPROVE, approval_request(shown) or ""
    )
    timeline.note(f"Alice approved the schedule tool's card (HTTP {status})")

    async def made() -> bool:
        return any(TOOL_TAG in s.prompt for s in await store.of_owner(TEAM, ALICE))

    try:
        await until_true(made, ANSWERED_S)
    except AssertionError:
        timeline.note("the approved call made no schedule")
        return None
    [schedule] = [s for s in await store.of_owner(TEAM, ALICE) if TOOL_TAG in s.prompt]
    timeline.note(f"{schedule.id} made through the tool: {_state(schedule)}")
    return schedule


def approval_request(card: Message) -> str | None:
    """The request id the card's Approve button carries."""
    for block in card.blocks:
        for element in block.get("elements") or ():
            if isinstance(element, dict) and element.get("action_id") == APPROVE:
                return str(element["value"])
    return None


async def schedules_through_faults(make: ClusterFactory) -> Report:
    async with make(
        "schedules", replicas=2, persistent_redis=True, config=CONFIG, budget_s=BUDGET_S
    ) as cluster:
        timeline = Timeline()
        model = ScriptedModel(cluster.llm, tool_tag=TOOL_TAG, prompt=PROMPT, one_off_s=ONE_OFF_S)
        cluster.llm.otherwise = model
        await cluster.client().config_set("appendfsync", "everysec")
        fsync = (await cluster.client().config_get("appendfsync"))["appendfsync"]
        timeline.note(f"Redis writes its append-only file with appendfsync {fsync}")
        for user in (ALICE, BOB, ADMIN):
            cluster.slack.users[user] = {"id": user, "tz": "UTC"}
        offset = time.time() - time.monotonic()
        store = schedule_store(cluster)
        grants = RoleGrants(cluster.client(), store.keys)
        first_replica, second_replica = cluster.replicas
        await cluster.command(first_replica, ADMIN, f"grant <@{BOB}> {STEPPER}")
        granted = [g.role for g in await grants.of(TEAM, BOB)]
        timeline.note(f"/agent grant: Bob holds {granted}")

        tool_made = await made_through_the_tool(cluster, store, timeline)

        now = time.time()
        first = next_minute(now + LEAD_S)
        minutes = tuple(first + 60.0 * n for n in range(MINUTES))
        once_at = now + ONE_OFF_S
        once = await make_schedule(store, ALICE, "ask-once", at=once_at)
        every = await make_schedule(store, ALICE, "ask-every", cron=EVERY_MINUTE)
        paused = await make_schedule(store, ALICE, "ask-paused", cron=EVERY_MINUTE)
        removed = await make_schedule(store, ALICE, "ask-removed", cron=EVERY_MINUTE)
        role = await make_schedule(store, BOB, "ask-role", cron=EVERY_MINUTE)
        made = [
            Made(once.id, "ask-once", (once.next_at or once_at,)),
            Made(every.id, "ask-every", minutes),
            Made(paused.id, "ask-paused", minutes[:1]),
            Made(removed.id, "ask-removed", minutes[:1]),
            Made(role.id, "ask-role", minutes),
        ]
        if tool_made is not None and tool_made.next_at is not None:
            made.append(Made(tool_made.id, TOOL_TAG, (tool_made.next_at,)))
        report_made = tool_made is not None
        timeline.note(
            f"made {', '.join(f'{m.id} {m.tag}' for m in made)}; the one-off at "
            f"{clock(once_at)}, the first minute {clock(first)}"
        )

        # Minute 1, then the changes between the first and second runs.
        firsts = [min(m.runs) for m in made]
        await runs_answered(cluster, made, offset, max(first, *firsts), timeline)
        said = await cluster.command(first_replica, ALICE, f"pause {paused.id}")
        timeline.note(f"/agent pause {paused.id}: {said.get('text', said)}")
        said = await cluster.command(second_replica, ALICE, f"unschedule {removed.id}")
        timeline.note(f"/agent unschedule {removed.id}: {said.get('text', said)}")
        await cluster.command(second_replica, ADMIN, f"revoke <@{BOB}> {STEPPER}")
        revoked = [g.role for g in await grants.of(TEAM, BOB)]
        timeline.note(f"/agent revoke: Bob holds {revoked}")

        # Minute 2: the replica running ask-every's turn is killed while the model thinks;
        # the other takes it over; the killed one starts again.
        model.hold("ask-every", minutes[1], HOLD_S)
        victim, kill = await kill_mid_run(cluster, model, minutes[1], offset, timeline)
        await runs_answered(cluster, made, offset, minutes[1], timeline)
        if victim is not None:
            await victim.restart(START_TIMEOUT_S)
            timeline.note(f"{victim.name} started again and is healthy")

        # Minute 3 on both; then Redis restarts.
        await runs_answered(cluster, made, offset, minutes[2], timeline)
        stopped, back = await kill_redis(cluster, REDIS_DOWN_S)
        timeline.note(f"Redis SIGKILLed and started again: away {back - stopped:.1f} s")

        # Minute 4, and a moment for a second run of anything to show.
        await runs_answered(cluster, made, offset, minutes[3], timeline)
        await asyncio.sleep(QUIET_S)

        report = Report(cluster.scenario)
        report.add(
            "a schedule was made through the tool (the model's call, the card, a click)",
            report_made,
            "" if report_made else "see the timeline",
        )
        seen = check_runs(report, made, cluster.slack, cluster.llm, offset, kill)
        add_takeover_checks(report, seen, cluster, model, kill, every.id, minutes[1])
        add_role_checks(report, [s for s in seen if s.made.id == role.id], cluster)
        report.add(
            f"Bob held {STEPPER} by the grant, and no longer after the revoke",
            granted == [STEPPER] and revoked == [],
            f"after the grant {granted}, after the revoke {revoked}",
        )
        await add_state_checks(report, store, once, every, paused, removed, minutes)
        report.notes += timeline.lines
        report.notes += tracebacks(cluster)
        report.notes.append(f"wall time of the scenario: {time.monotonic() - timeline.began:.0f} s")
        report.logs = cluster.logs()
        return report


def add_role_checks(report: Report, runs: list[Seen], cluster: Cluster) -> None:
    """Bob's first run offered the tool his granted role gives; the second (after the
    revoke; asked twice if the kill cut it short) did not, and still offered what his
    default role gives."""
    offers = [[sorted(offered(r)) for r in requests_of(run, cluster.llm)] for run in runs[:2]]
    first = offers[0] if offers else []
    second = offers[1] if len(offers) > 1 else []
    report.add(
        f"Bob's first run offered {LOST_TOOL} (granted), the second did not (revoked)",
        len(first) == 1
        and LOST_TOOL in first[0]
        and bool(second)
        and all(LOST_TOOL not in tools and KEPT_TOOL in tools for tools in second),
        f"first run offered {first}, second {second}",
    )


def add_takeover_checks(
    report: Report,
    seen: list[Seen],
    cluster: Cluster,
    model: ScriptedModel,
    kill: Kill,
    schedule_id: str,
    minute: float,
) -> None:
    """The run killed mid-turn: the kill came while its model request waited for the held
    answer; another replica asked the model again within TAKEOVER_S of the kill; the run's
    thread shows its headline and one answer, and nothing else, nothing left running."""
    held = model.held_request
    report.add(
        f"the replica running {schedule_id}'s run at {clock(minute)} was SIGKILLed while "
        "the model held its answer",
        held is not None and held.index in kill.requests and kill.at - held.at < HOLD_S,
        "no request was held"
        if held is None
        else f"{kill.replica} killed {kill.at - held.at:.2f} s after the request arrived "
        f"(held {HOLD_S:.0f} s)",
    )
    [run] = [s for s in seen if s.made.id == schedule_id and s.occurrence == minute]
    again = [i for i in run.requests if i not in kill.requests]
    takeover = [cluster.llm.arrived_at[i] - kill.at for i in again]
    report.add(
        f"another replica took it over within {TAKEOVER_S:.0f} s: the model asked once more, "
        "one answer",
        run.taken_over(kill)
        and len(takeover) == 1
        and 0 < takeover[0] <= TAKEOVER_S
        and len(run.answers) == 1,
        f"{run.counts(kill)}; asked again "
        + ", ".join(
            f"+{t:.1f} s after the kill by {model.callers.get(i)}"
            for i, t in zip(again, takeover, strict=True)
        )
        + (
            f"; answered +{run.answers[0].updated_at - kill.at:.1f} s after the kill"
            if run.answers
            else ""
        ),
    )
    thread = [
        m
        for headline in run.headlines
        for m in cluster.slack.thread(headline.channel, headline.ts)
        if m.ts != headline.ts
    ]
    others = [m for m in thread if m not in run.answers]
    leftovers = left_behind(thread)
    report.add(
        "its thread shows the one answer and nothing else, nothing left running",
        len(run.headlines) == 1 and not others and not leftovers,
        "; ".join([*(f"also {m.ts}: {m.text[:60]!r}" for m in others), *leftovers]),
    )


async def add_state_checks(
    report: Report,
    store: ScheduleStore,
    once: Schedule,
    every: Schedule,
    paused: Schedule,
    removed: Schedule,
    minutes: tuple[float, ...],
) -> None:
    """What the store holds at the end, after the Redis restart."""
    now_once, now_every, now_paused, now_removed = [
        await _get(store, s.id) for s in (once, every, paused, removed)
    ]
    report.add(
        "the one-off ended after its run",
        now_once is not None and now_once.state == "ended" and now_once.last_at is not None,
        _state(now_once),
    )
    report.add(
        f"{every.id} is active, its last run the fourth minute, its next the fifth",
        now_every is not None
        and now_every.state == "active"
        and now_every.last_at == minutes[-1]
        and now_every.next_at == minutes[-1] + 60.0,
        _state(now_every),
    )
    report.add(
        f"{paused.id} is paused, its last run the first minute",
        now_paused is not None
        and now_paused.state == "paused"
        and now_paused.last_at == minutes[0],
        _state(now_paused),
    )
    report.add(f"{removed.id} is gone", now_removed is None, _state(now_removed))


async def _get(store: ScheduleStore, schedule_id: str) -> Schedule | None:
    """The schedule, read again if the connection the Redis restart cut is met first."""
    for _ in range(3):
        with contextlib.suppress(*REDIS_AWAY, StateUnavailable):
            return await store.get(schedule_id)
        await asyncio.sleep(0.2)
    return await store.get(schedule_id)


def _state(schedule: Schedule | None) -> str:
    if schedule is None:
        return "none"
    last = "never" if schedule.last_at is None else clock(schedule.last_at)
    following = "none" if schedule.next_at is None else clock(schedule.next_at)
    reason = f" ({schedule.reason})" if schedule.reason else ""
    return f"{schedule.state}{reason}, last {last}, next {following}"


def tracebacks(cluster: Cluster) -> list[str]:
    """The replicas' tracebacks, for the notes (the Redis restart may leave some)."""
    return [
        f"{replica.name}: {len(found)} traceback(s): {'; '.join(sorted(set(found))[:3])}"
        for replica in cluster.replicas
        if (found := replica.tracebacks())
    ]
