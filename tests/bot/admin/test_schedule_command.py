"""``/agent schedules``, ``pause``, ``resume`` and ``unschedule`` on the real Redis: one's own
schedules listed; the owner or an admin changes one (the store audits it), anyone else is
refused (audited); ``schedules all`` is an admin's; a resumed schedule runs next at its
first time after now, and a one-off whose time has passed cannot resume."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.admin.commands import AdminCommands
from bot.admin.context import Caller
from bot.process.state import State
from bot.schedules.recurrence import Recurrence
from bot.state.audit import AuditKind
from bot.state.schedules import Schedule, TooMany
from tests.bot.admin.channels_kit import ADMIN, ALICE, BOB, admin_commands, audited

START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # a Tuesday
HOURLY = Recurrence(cron="0 * * * *", at=None, timezone="UTC")


@dataclass
class Clock:
    now: float = field(default_factory=START.timestamp)

    def __call__(self) -> float:
        return self.now


async def made(
    state: State,
    owner: str = "UALICE",
    prompt: str = "Summarise the night's incidents",
    recurrence: Recurrence = HOURLY,
    team: str = "T1",
) -> Schedule:
    upcoming = recurrence.next_after(START)
    assert upcoming is not None
    schedule = await state.shared.schedules.create(
        team=team,
        owner=owner,
        channel="C0OPS",
        prompt=prompt,
        recurrence=recurrence,
        next_at=upcoming.timestamp(),
        max_per_person=10,
        by=owner,
    )
    assert not isinstance(schedule, TooMany)
    return schedule


async def said(admin: AdminCommands, caller: Caller, text: str) -> str:
    return (await admin.run(caller, text)).text


async def test_ones_own_schedules_and_an_admins_everyone(state: State) -> None:
    admin = admin_commands(state)
    assert (await said(admin, ALICE, "schedules")).startswith("You have no schedules.")
    first = await made(state)
    bobs = await made(state, owner="UBOB", prompt="Check the release")
    second = await made(state, prompt="Weekly report")
    own = (await said(admin, ALICE, "schedules")).splitlines()
    assert own[0].startswith("*Your schedules* (2 schedules;")
    assert own[1].startswith(
        f"• `{first.id}` — “Summarise the night's incidents” in <#C0OPS> — every hour (UTC) — "
        "next <!date^"
    )
    assert own[1].endswith("— not run yet") and own[2].startswith(f"• `{second.id}` — “Weekly")
    assert len(own) == 3

    refused = await said(admin, ALICE, "schedules all")
    assert refused.startswith("Sorry, `/agent schedules all` is only for admins.")
    everyone = (await said(admin, ADMIN, "schedules ALL")).splitlines()
    assert everyone[0] == "*Everyone's schedules* (3 schedules):"
    assert [row.split(" — ")[0] for row in everyone[1:]] == [
        "*<@UALICE>* (2):",
        f"• `{first.id}`",
        f"• `{second.id}`",
        "*<@UBOB>* (1):",
        f"• `{bobs.id}`",
    ]
    assert [(e.actor, e.action, e.outcome) for e in await audited(state, AuditKind.ADMIN)] == [
        ("UALICE", "schedules all", "refused"),
        ("UADMIN", "schedules all", "ok"),
    ]
    hint = await said(admin, ALICE, "schedules al")
    assert hint == "`/agent schedules` takes no arguments. Admins: try `schedules all`."


async def test_the_owner_pauses_resumes_and_unschedules(state: State) -> None:
    clock = Clock()
    admin = admin_commands(state, clock=clock)
    schedule = await made(state)
    sid = schedule.id
    assert await said(admin, ALICE, f"pause {sid}") == (
        f"Paused schedule `{sid}` “Summarise the night's incidents”: it does not run until "
        f"`/agent resume {sid}`."
    )
    stored = await state.shared.schedules.get(sid)
    assert stored is not None
    assert (stored.state, stored.reason) == ("paused", "paused by <@UALICE>")
    assert await said(admin, ALICE, f"pause `{sid.upper()}`") == (
        f"Schedule `{sid}` is already *paused* by <@UALICE>."
    )
    assert "*paused* by <@UALICE> — not run yet" in await said(admin, ALICE, "schedules")

    clock.now = START.timestamp() + 3 * 3600 + 60  # 15:01: the next run is at 16:00
    expected = int(datetime(2026, 12, 1, 16, 0, tzinfo=UTC).timestamp())
    assert await said(admin, ALICE, f"resume {sid}") == (
        f"Resumed schedule `{sid}`: next <!date^{expected}^{{date_short_pretty}} at {{time}}|"
        "01 Dec 2026 16:00 UTC>."
    )
    resumed = await state.shared.schedules.get(sid)
    assert resumed is not None
    assert (resumed.state, resumed.next_at) == ("active", expected)
    assert (await said(admin, ALICE, f"resume {sid}")).startswith(
        f"Schedule `{sid}` is not paused: next <!date^{expected}^"
    )

    assert await said(admin, ALICE, f"unschedule {sid}") == (
        f"Removed schedule `{sid}` “Summarise the night's incidents”: it will not run again."
    )
    assert await state.shared.schedules.get(sid) is None
    assert await said(admin, ALICE, f"pause {sid}") == (
        f"There is no schedule `{sid}`. `/agent schedules` lists yours."
    )
    changes = [(e.actor, e.action, e.target) for e in await audited(state, AuditKind.SCHEDULE)]
    assert changes[1:] == [
        ("UALICE", "paused", sid),
        ("UALICE", "resumed", sid),
        ("UALICE", "removed", sid),
    ]
    assert await audited(state, AuditKind.ADMIN) == []


async def test_someone_else_is_refused_and_an_admin_acts_on_anyones(state: State) -> None:
    admin = admin_commands(state)
    schedule = await made(state)
    sid = schedule.id
    for verb, word in (("pause", "pause"), ("resume", "resume"), ("unschedule", "remove")):
        assert await said(admin, BOB, f"{verb} {sid}") == (
            f"Sorry, only <@UALICE>, who made schedule `{sid}`, or an admin can {word} it."
        )
    assert await state.shared.schedules.get(sid) == schedule
    refusals = [
        (e.actor, e.action, e.target, e.outcome) for e in await audited(state, AuditKind.ADMIN)
    ]
    assert refusals == [
        ("UBOB", "pause", sid, "refused"),
        ("UBOB", "resume", sid, "refused"),
        ("UBOB", "unschedule", sid, "refused"),
    ]

    assert (await said(admin, ADMIN, f"pause {sid}")).startswith(f"Paused schedule `{sid}`")
    assert f"• `{sid}` — " in (own := await said(admin, ALICE, "schedules"))
    assert "*paused* by <@UADMIN>" in own
    assert (await said(admin, ADMIN, f"resume {sid}")).startswith(f"Resumed schedule `{sid}`")
    assert (await said(admin, ADMIN, f"unschedule {sid}")).startswith(f"Removed schedule `{sid}`")
    changes = [(e.actor, e.action) for e in await audited(state, AuditKind.SCHEDULE)]
    assert changes[1:] == [("UADMIN", "paused"), ("UADMIN", "resumed"), ("UADMIN", "removed")]


async def test_a_one_off_resumes_only_while_its_time_is_ahead(state: State) -> None:
    clock = Clock()
    admin = admin_commands(state, clock=clock)
    at = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)
    once = await made(state, recurrence=Recurrence(cron=None, at=at, timezone="UTC"))
    await said(admin, ALICE, f"pause {once.id}")
    clock.now = at.timestamp() - 60
    assert (await said(admin, ALICE, f"resume {once.id}")).startswith(
        f"Resumed schedule `{once.id}`: next <!date^{int(at.timestamp())}^"
    )
    await said(admin, ALICE, f"pause {once.id}")
    clock.now = at.timestamp() + 1
    assert await said(admin, ALICE, f"resume {once.id}") == (
        f"Schedule `{once.id}` was to run once, on 2026-12-01 at 13:00 (UTC), which has passed: "
        f"it cannot resume. `/agent unschedule {once.id}` removes it."
    )
    still = await state.shared.schedules.get(once.id)
    assert still is not None and still.state == "paused"


async def test_why_a_schedule_is_paused_shows_in_an_admins_list(state: State) -> None:
    admin = admin_commands(state)
    schedule = await made(state)
    await state.shared.schedules.pause(
        schedule.id, by="UALICE", reason="owner left the workspace", action="owner_gone"
    )
    assert "*paused*: owner left the workspace" in await said(admin, ADMIN, "schedules all")


async def test_bad_ids_and_other_workspaces(state: State) -> None:
    admin = admin_commands(state)
    elsewhere = await made(state, team="T2")
    assert await said(admin, ALICE, "pause") == (
        "Usage: `/agent pause <id>` (`/agent schedules` lists yours with their ids)."
    )
    assert (await said(admin, ALICE, "unschedule s1 s2")).startswith(
        "Usage: `/agent unschedule <id>`"
    )
    assert await said(admin, ADMIN, "resume s999") == (
        "There is no schedule `s999`. `/agent schedules` lists yours."
    )
    # An admin of T1 neither sees nor changes T2's.
    assert await said(admin, ADMIN, f"unschedule {elsewhere.id}") == (
        f"There is no schedule `{elsewhere.id}`. `/agent schedules` lists yours."
    )
    assert await said(admin, ADMIN, "schedules all") == "Nobody has a schedule."
    assert await state.shared.schedules.get(elsewhere.id) == elsewhere


async def test_help_lists_the_schedule_commands(state: State) -> None:
    admin = admin_commands(state)
    everyone = await said(admin, ALICE, "help")
    assert "• `/agent schedules` — your schedules: each one's id, when it runs next" in everyone
    assert "• `/agent pause <id>` / `/agent resume <id>` / `/agent unschedule <id>`" in everyone
    assert "schedules all" not in everyone
    assert "• `/agent schedules all` — everyone's schedules;" in await said(admin, ADMIN, "help")
    assert "Did you mean `/agent unschedule`?" in await said(admin, ALICE, "unschedul s1")
