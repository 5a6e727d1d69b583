"""The ``schedule`` tool behind the approval wrapper, as a Slack turn's toolset has it: its
input checked before anyone is asked (a refusal the model reads, and no card), the person's
own time zone by default, the card's preview (the prompt, the recurrence in words, the next
three runs), the schedule made once approved, and the most a person may have. On the real
store, on a fixed clock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.process.state import State
from bot.schedules.config import SchedulesConfig
from bot.schedules.recurrence import Recurrence
from bot.schedules.tool import ScheduleTool, preview
from tools.approval import ApprovalToolset, Approved, Verdict
from tools.call_context import Requester, for_requester
from tools.definition import Tool
from tools.errors import ToolError
from tools.preview import CallPreview
from tools.toolset import StaticToolset

NOW = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)  # a Tuesday, 08:00 in Berlin
ALICE = Requester("T1", "U0ALICE", "C0OPS", "100.000001", user_team="T1")
WEEKDAYS = {"prompt": "Summarise yesterday's incidents.", "cron": "0 9 * * 1-5"}


class Asked:
    """An approver that records who it was asked about, and approves (after ``meanwhile``)."""

    def __init__(self, meanwhile: Callable[[], Awaitable[None]] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.previews: list[CallPreview] = []
        self.meanwhile = meanwhile

    async def __call__(self, tool: Tool, arguments: dict[str, Any]) -> Verdict:
        self.calls.append(arguments)
        assert tool.preview is not None
        self.previews.append(await tool.preview(arguments))
        if self.meanwhile is not None:
            await self.meanwhile()
        return Approved()


def made(
    state: State, zone: str | None = None, **config: Any
) -> tuple[ScheduleTool, list[tuple[str, str]]]:
    asked: list[tuple[str, str]] = []

    async def zone_of(team: str, user: str) -> str | None:
        asked.append((team, user))
        return zone

    schedules = ScheduleTool(SchedulesConfig(**config), "/agent", clock=NOW.timestamp)
    schedules.use(state.shared.schedules, zone_of)
    return schedules, asked


async def call(
    schedules: ScheduleTool,
    arguments: dict[str, Any],
    approver: Asked,
    requester: Requester | None = ALICE,
) -> Any:
    """The call as a Slack turn makes it: for its person, behind the approval wrapper."""
    inner = ApprovalToolset(StaticToolset([schedules.tool()]), approver)
    toolset = for_requester(inner, requester) if requester is not None else inner
    tool = await toolset.get_tool("schedule")
    return await tool.invoke(arguments)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"prompt": "x", "cron": "0 9 * *"}, "has 4 fields"),
        ({"prompt": "x", "cron": "*/5 * * * *"}, "schedules.min_interval_s"),
        ({"prompt": "x", "at": "2026-11-30T09:00"}, "is in the past"),
        ({"prompt": "x", "at": "2026-12-01T07:00:05+00:00"}, "at least 10 seconds ahead"),
        ({"prompt": "x", "cron": "0 9 * * *", "at": "2026-12-04T09:00"}, "not both"),
        ({"prompt": "x"}, "Give `cron`"),
        ({"prompt": "x", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "IANA"),
        ({"prompt": "   ", "cron": "0 9 * * *"}, "`prompt` is empty"),
        ({"prompt": "x" * 4001, "cron": "0 9 * * *"}, "at most 4,000"),
    ],
)
async def test_bad_input_is_refused_before_anyone_is_asked(
    state: State, arguments: dict[str, Any], said: str
) -> None:
    schedules, _ = made(state)
    approver = Asked()
    with pytest.raises(ToolError) as refused:
        await call(schedules, arguments, approver)
    assert refused.value.kind == "InvalidSchedule"
    assert said in str(refused.value)
    assert approver.calls == []  # no card
    assert await state.shared.schedules.of_owner("T1", "U0ALICE") == []


async def test_arguments_the_schema_refuses_are_refused_before_anyone_is_asked(
    state: State,
) -> None:
    schedules, _ = made(state)
    approver = Asked()
    with pytest.raises(ToolError) as refused:
        await call(schedules, {"cron": "0 9 * * *", "when": "soon"}, approver)
    assert refused.value.kind == "InvalidArguments"
    assert approver.calls == []


@pytest.mark.parametrize(
    ("requester", "said"),
    [
        (None, "there is none here"),
        (Requester("T1", "U0ALICE", None), "there is none here"),
        (Requester("T1", "U0GUEST", "C0OPS", user_team="T9"), "people of this workspace"),
        (Requester("T1", "U0GUEST", "C0OPS", user_team=""), "people of this workspace"),
    ],
)
async def test_only_a_person_of_this_workspace_in_a_conversation_makes_one(
    state: State, requester: Requester | None, said: str
) -> None:
    schedules, _ = made(state)
    approver = Asked()
    with pytest.raises(ToolError) as refused:
        await call(schedules, WEEKDAYS, approver, requester)
    assert said in str(refused.value)
    assert approver.calls == []


async def test_without_slack_it_says_schedules_are_made_in_slack() -> None:
    schedules = ScheduleTool(SchedulesConfig(), "/agent", clock=NOW.timestamp)  # the console
    approver = Asked()
    with pytest.raises(ToolError) as refused:
        await call(schedules, WEEKDAYS, approver)
    assert "Schedules are made in Slack" in str(refused.value)
    assert approver.calls == []


async def test_the_card_shows_the_prompt_the_words_and_the_next_three_runs(
    state: State,
) -> None:
    schedules, asked = made(state, zone="Europe/Berlin")
    approver = Asked()
    await call(schedules, WEEKDAYS, approver)
    [shown] = approver.previews
    assert shown.facts == (
        ("Prompt", "Summarise yesterday's incidents."),
        ("Runs", "at 09:00, Monday through Friday (Europe/Berlin)"),
    )
    assert shown.times_label == "Next runs"
    berlin_nine = [  # Tuesday to Thursday at 09:00 CET
        datetime(2026, 12, day, 8, 0, tzinfo=UTC).timestamp() for day in (1, 2, 3)
    ]
    assert list(shown.times) == berlin_nine
    assert ("T1", "U0ALICE") in asked  # the person's own zone, asked of Slack


async def test_a_zone_given_wins_and_without_one_slack_s_else_the_configured(
    state: State,
) -> None:
    given, _ = made(state, zone="Europe/Berlin")
    approver = Asked()
    await call(given, {**WEEKDAYS, "timezone": "America/New_York"}, approver)
    assert "(America/New_York)" in dict(approver.previews[0].facts)["Runs"]

    unknown, _ = made(state, zone=None, timezone="Asia/Tokyo")
    approver = Asked()
    await call(unknown, {**WEEKDAYS, "prompt": "again"}, approver)
    assert "(Asia/Tokyo)" in dict(approver.previews[0].facts)["Runs"]


async def test_approved_it_makes_the_schedule_where_it_was_asked(state: State) -> None:
    schedules, _ = made(state, zone="Europe/Berlin")
    result = await call(schedules, WEEKDAYS, Asked())
    [schedule] = await state.shared.schedules.of_owner("T1", "U0ALICE")
    assert result["id"] == schedule.id == "s1"
    assert result["runs"] == "at 09:00, Monday through Friday (Europe/Berlin)"
    assert result["next_run"] == "2026-12-01T09:00+01:00"
    assert "/agent unschedule s1" in result["manage"]
    assert (schedule.team, schedule.owner, schedule.channel) == ("T1", "U0ALICE", "C0OPS")
    assert schedule.prompt == "Summarise yesterday's incidents."
    assert schedule.recurrence == Recurrence("0 9 * * 1-5", None, "Europe/Berlin")
    assert schedule.next_at == datetime(2026, 12, 1, 8, 0, tzinfo=UTC).timestamp()
    assert schedule.state == "active"


async def test_a_one_off_shows_its_one_run(state: State) -> None:
    schedules, _ = made(state, zone="UTC")
    approver = Asked()
    await call(schedules, {"prompt": "Check the release.", "at": "2026-12-04T16:30"}, approver)
    [shown] = approver.previews
    assert shown.times_label == "Runs at"
    assert shown.times == (datetime(2026, 12, 4, 16, 30, tzinfo=UTC).timestamp(),)
    assert dict(shown.facts)["Runs"] == "once, on 2026-12-04 at 16:30 (UTC)"


async def test_no_more_than_the_most_a_person_may_have(state: State) -> None:
    schedules, _ = made(state, max_per_person=1)
    await call(schedules, WEEKDAYS, Asked())
    approver = Asked()
    with pytest.raises(ToolError) as refused:
        await call(schedules, {**WEEKDAYS, "prompt": "another"}, approver)
    assert refused.value.kind == "TooManySchedules"
    assert "1 schedules already" in str(refused.value) and "max_per_person" in str(refused.value)
    assert approver.calls == []  # refused before the card
    assert len(await state.shared.schedules.of_owner("T1", "U0ALICE")) == 1


async def test_one_made_while_the_card_waited_counts_when_it_is_made(state: State) -> None:
    """The count before the card is a courtesy; the store's step decides."""
    schedules, _ = made(state, max_per_person=1)
    other, _ = made(state, max_per_person=1)

    async def made_meanwhile() -> None:
        await call(other, {**WEEKDAYS, "prompt": "made elsewhere"}, Asked())

    with pytest.raises(ToolError) as refused:
        await call(schedules, WEEKDAYS, Asked(made_meanwhile))
    assert refused.value.kind == "TooManySchedules"
    [kept] = await state.shared.schedules.of_owner("T1", "U0ALICE")
    assert kept.prompt == "made elsewhere"


def test_the_preview_of_a_plan_is_pure() -> None:
    from bot.schedules.tool import Plan

    recurrence = Recurrence("0 9 * * *", None, "UTC")
    plan = Plan("T1", "U1", "C1", "Ask.", recurrence, (1.0, 2.0, 3.0))
    assert preview(plan) == CallPreview(
        (("Prompt", "Ask."), ("Runs", "at 09:00, every day (UTC)")), "Next runs", (1.0, 2.0, 3.0)
    )
