"""The typed storage the admin features build on: switches, grants, usage, audit."""

from __future__ import annotations

from datetime import date

import pytest

from bot.llm.usage import Usage
from bot.process.state import State
from bot.state.audit import AuditEntry, AuditKind
from bot.state.usage import UsageTotals
from tests.fakes.round_trips import counting_round_trips


@pytest.mark.cluster
async def test_tool_switches(state: State) -> None:
    assert await state.shared.switches.is_enabled("calculate")
    switch = await state.shared.switches.turn("calculate", False, by="U0ADMIN")
    assert switch.enabled is False and switch.by == "U0ADMIN" and switch.at > 0
    assert not await state.shared.switches.is_enabled("calculate")
    assert await state.shared.switches.disabled() == {"calculate"}
    await state.shared.switches.turn("calculate", True, by="U0OTHER")
    assert await state.shared.switches.is_enabled("calculate")
    everything = await state.shared.switches.all()
    assert everything["calculate"].by == "U0OTHER"


@pytest.mark.cluster
async def test_role_grants(state: State) -> None:
    await state.shared.grants.grant("T1", "U1", "warehouse_staff", by="U0ADMIN")
    await state.shared.grants.grant("T1", "U1", "admin", by="U0ADMIN")
    await state.shared.grants.grant("T1", "U2", "admin", by="U0ADMIN")
    assert [g.role for g in await state.shared.grants.of("T1", "U1")] == [
        "admin",
        "warehouse_staff",
    ]
    assert await state.shared.grants.of("T2", "U1") == []
    assert await state.shared.grants.revoke("T1", "U1", "admin")
    assert not await state.shared.grants.revoke("T1", "U1", "admin")
    assert [(g.user, g.role) for g in await state.shared.grants.all("T1")] == [
        ("U1", "warehouse_staff"),
        ("U2", "admin"),
    ]
    await state.shared.grants.revoke("T1", "U2", "admin")
    assert [g.user for g in await state.shared.grants.all("T1")] == ["U1"]


@pytest.mark.cluster
async def test_usage_per_user_per_day(state: State) -> None:
    monday, tuesday = date(2026, 11, 16), date(2026, 11, 17)
    await state.shared.usage.record("T1", "U1", Usage(100, 20), 0.5, day=monday)
    await state.shared.usage.record("T1", "U1", Usage(10, 2), 0.25, day=tuesday)
    await state.shared.usage.record("T1", "U1", Usage(1, 1), None, day=tuesday)
    await state.shared.usage.record("T1", "U2", Usage(5, 5), 0.1, day=tuesday)
    assert await state.shared.usage.totals("T1", "U1", days=1, until=tuesday) == UsageTotals(
        2, 11, 3, 0.25
    )
    week = await state.shared.usage.totals("T1", "U1", days=7, until=tuesday)
    assert week == UsageTotals(3, 111, 23, 0.75)
    assert await state.shared.usage.users("T1", days=1, until=tuesday) == ["U1", "U2"]
    assert await state.shared.usage.users("T1", days=1, until=monday) == ["U1"]


@pytest.mark.cluster
async def test_audit_log(state: State) -> None:
    await state.shared.audit.add(
        AuditEntry(AuditKind.ADMIN, "U0ADMIN", "disable", target="calculate")
    )
    await state.shared.audit.add(
        AuditEntry(
            AuditKind.TOOL, "U1", "calculate", outcome="ok", detail={"arguments": '{"x": 1}'}
        )
    )
    latest = await state.shared.audit.latest(10)
    assert [(e.kind, e.actor, e.action) for e in latest] == [
        ("tool", "U1", "calculate"),
        ("admin", "U0ADMIN", "disable"),
    ]
    assert latest[0].detail == {"arguments": '{"x": 1}'}
    assert latest[1].target == "calculate" and latest[1].id
    assert len(await state.shared.audit.latest(1)) == 1


@pytest.mark.cluster
async def test_audit_is_capped(state: State) -> None:
    from bot.state.audit import AuditLog

    small = AuditLog(state.client, state.keys, max_entries=10)
    for n in range(300):
        await small.add(AuditEntry(AuditKind.TOOL, "U1", f"t{n}"))
    # Approximate trimming keeps a little more than the cap, never unbounded growth.
    assert await state.client.xlen(state.keys.audit(0)) < 200
    assert (await small.latest(1))[0].action == "t299"


async def test_the_usage_report_is_one_round_trip(state: State) -> None:
    for user, tokens in (("U1", 10), ("U2", 20), ("U3", 30)):
        for _ in range(2):
            await state.shared.usage.record("T1", user, Usage(tokens, 1), 0.5)
    with counting_round_trips() as trips:
        report = await state.shared.usage.report("T1", days=7)
        single = await state.shared.usage.person("T1", "U2", days=7)
    assert trips.sent == 2  # one each
    by_user = {p.user: p for p in report}
    assert set(by_user) == {"U1", "U2", "U3"}
    assert by_user["U3"].all_days.prompt_tokens == 60 and by_user["U3"].all_days.turns == 2
    assert by_user["U1"].last_day == by_user["U1"].all_days  # all of it today
    assert single.all_days == by_user["U2"].all_days
