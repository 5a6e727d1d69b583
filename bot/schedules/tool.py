"""The ``schedule`` tool (issue 34): a person asks for a prompt to run later, once or on a
recurrence. Each run is a turn of its owner's in the conversation where the schedule was
made (a channel or a DM), under a headline of its own (bot/schedules/firing.py).

Everything about the input is checked before anyone is asked to approve it (the tool's
``check``): who asks and where (a person of this workspace, in a Slack conversation), the
prompt, the recurrence (``parse_recurrence``: a cron expression or one time, the interval,
the one-off's lead, the zone) and how many schedules the person has. A refusal is an error
the model relays, and no card. Making a schedule acts in the person's name at every run, so
the tool says ``confirm``: the approval card shows its preview (the prompt, the recurrence in
words, the next three runs as Slack dates); roles' ``approval_exempt`` may exempt it and
roles' tool patterns govern it like any tool's. Approved, it is checked again (time has
passed) and made (``ScheduleStore.create``, which counts the person's schedules in the
same step).

The time zone: the argument, else the person's own in Slack (users.info ``tz``), else
``schedules.timezone``. The tool is in the registry from the start, so roles name it and
``slack-agent tools`` lists it; what it needs of Redis and Slack is given when a process
builds its Slack side (:meth:`ScheduleTool.use`). Without them (the console) it says that
schedules are made in Slack.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import Field, ValidationError

from bot.schedules.config import SchedulesConfig
from bot.schedules.recurrence import Recurrence, ScheduleInputError, parse_recurrence
from bot.state.schedules import ScheduleStore, TooMany
from tools.call_context import Requester, current_requester
from tools.definition import Tool
from tools.errors import ToolArgumentsError, ToolError
from tools.preview import CallPreview
from tools.schema import ToolArguments, json_schema

NAME = "schedule"
PROMPT_CHARS = 4_000  # a scheduled prompt's length, at most
UPCOMING = 3  # the runs the card shows

Clock = Callable[[], float]
ZoneOf = Callable[[str, str], Awaitable[str | None]]  # (team, user) -> their own time zone

DESCRIPTION = (
    "Make a scheduled ask: `prompt` runs later as the person who asked, once or on a "
    "recurrence, and each run's answer is posted where the schedule was made (this channel "
    "or DM) under a message of its own. Give exactly one of `cron` (a standard five-field "
    "cron expression: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5' for "
    "weekdays at 09:00) or `at` (one ISO 8601 date and time, e.g. '2026-12-04T09:00', for a "
    "single run). Times are in `timezone` (an IANA name such as 'Europe/Berlin'); leave it "
    "out to use the person's own Slack time zone. Write `prompt` as the whole ask, to be "
    "read on its own at run time: the run does not see this conversation. A person approves "
    "the schedule before it is made; people list and remove theirs with the `{command} "
    "schedules` and `{command} unschedule` commands."
)


class ScheduleArguments(ToolArguments):
    prompt: str = Field(description="What to ask at each run, written to stand on its own.")
    cron: str | None = Field(
        default=None,
        description="A recurring schedule: five cron fields (minute hour day-of-month month "
        "day-of-week). Not with `at`.",
    )
    at: str | None = Field(
        default=None,
        description="A single run: an ISO 8601 date and time (without an offset: in "
        "`timezone`). Not with `cron`.",
    )
    timezone: str | None = Field(
        default=None,
        description="An IANA time zone name; leave it out for the person's own.",
    )


class ScheduleRefused(ToolError):
    """The input makes no schedule; the message says what to fix."""

    kind = "InvalidSchedule"


class TooManySchedules(ToolError):
    kind = "TooManySchedules"


@dataclass(frozen=True)
class Plan:
    """A schedule as the input asks for it, checked: whose, where, what, when."""

    team: str
    owner: str
    channel: str
    prompt: str
    recurrence: Recurrence
    upcoming: tuple[float, ...]  # its next runs, the first one when it is made


class ScheduleTool:
    """The ``schedule`` tool of one process."""

    def __init__(self, config: SchedulesConfig, command: str, clock: Clock = time.time) -> None:
        self.config = config
        self.command = command  # the slash command people manage their schedules with
        self.clock = clock
        self.store: ScheduleStore | None = None
        self.zone_of: ZoneOf | None = None

    def use(self, store: ScheduleStore, zone_of: ZoneOf) -> None:
        """What making a schedule needs: its store, and people's own time zones (Slack)."""
        self.store = store
        self.zone_of = zone_of

    def tool(self) -> Tool:
        return Tool(
            name=NAME,
            description=DESCRIPTION.format(command=self.command),
            parameters=json_schema(ScheduleArguments),
            invoke=self._make,
            confirm=True,
            confirm_reason="a schedule runs in the person's name at each of its times",
            check=self._check,
            preview=self._preview,
        )

    async def _check(self, arguments: dict[str, Any]) -> None:
        await self.plan(arguments)

    async def _preview(self, arguments: dict[str, Any]) -> CallPreview:
        plan = await self.plan(arguments)
        return preview(plan)

    async def _make(self, arguments: dict[str, Any]) -> dict[str, Any]:
        plan = await self.plan(arguments)  # checked again: time has passed since the card
        assert self.store is not None  # plan() refuses without it
        made = await self.store.create(
            team=plan.team,
            owner=plan.owner,
            channel=plan.channel,
            prompt=plan.prompt,
            recurrence=plan.recurrence,
            next_at=plan.upcoming[0],
            max_per_person=self.config.max_per_person,
            by=plan.owner,
        )
        if isinstance(made, TooMany):
            raise TooManySchedules(self._too_many(made.limit))
        return {
            "id": made.id,
            "runs": plan.recurrence.words(),
            "next_run": _local(plan.upcoming[0], plan.recurrence),
            "posts_in": f"<#{plan.channel}>",
            "manage": f"{self.command} schedules lists it; {self.command} pause {made.id}, "
            f"{self.command} resume {made.id} and {self.command} unschedule {made.id} change it",
        }

    async def plan(self, arguments: dict[str, Any]) -> Plan:
        """The schedule ``arguments`` ask for, for the person the call runs for; a
        :class:`ToolError` saying what to fix when they make none."""
        try:
            given = ScheduleArguments.model_validate(arguments)
        except ValidationError as exc:
            raise ToolArgumentsError.from_pydantic(NAME, exc.errors()) from None
        who = self._requester()
        if self.store is None or self.zone_of is None:
            raise ScheduleRefused(
                "Schedules are made in Slack: this conversation has nowhere for their runs to post."
            )
        prompt = given.prompt.strip()
        if not prompt:
            raise ScheduleRefused("`prompt` is empty: give the ask to run at each time.")
        if len(prompt) > PROMPT_CHARS:
            raise ScheduleRefused(
                f"`prompt` is {len(prompt):,} characters long; a scheduled prompt is at most "
                f"{PROMPT_CHARS:,}."
            )
        zone = (given.timezone or "").strip() or await self._own_zone(who)
        now = datetime.fromtimestamp(self.clock(), UTC)
        try:
            recurrence = parse_recurrence(
                cron=given.cron,
                at=given.at,
                timezone=zone,
                now=now,
                min_interval_s=self.config.min_interval_s,
                one_off_lead_s=self.config.one_off_lead_s,
            )
        except ScheduleInputError as exc:
            raise ScheduleRefused(str(exc)) from None
        upcoming = tuple(t.timestamp() for t in recurrence.upcoming(now, UPCOMING))
        if not upcoming:
            raise ScheduleRefused("That schedule has no run ahead of now.")
        assert who.channel is not None  # _requester() refuses a call outside a conversation
        owned = await self.store.of_owner(who.team, who.user)
        if sum(1 for s in owned if s.state != "ended") >= self.config.max_per_person:
            raise TooManySchedules(self._too_many(self.config.max_per_person))
        return Plan(who.team, who.user, who.channel, prompt, recurrence, upcoming)

    def _requester(self) -> Requester:
        who = current_requester()
        if who is None or not who.channel:
            raise ScheduleRefused(
                "A schedule is made in a Slack conversation, where its runs post; there is "
                "none here."
            )
        if who.user_team != who.team:
            raise ScheduleRefused(
                "Schedules are made by people of this workspace only: a run acts in its "
                "owner's name, and this person's workspace is another."
            )
        return who

    async def _own_zone(self, who: Requester) -> str:
        assert self.zone_of is not None
        return await self.zone_of(who.team, who.user) or self.config.timezone

    def _too_many(self, limit: int) -> str:
        return (
            f"This person has {limit} schedules already, the most one may have "
            f"(schedules.max_per_person): remove one first ({self.command} schedules lists "
            f"them, {self.command} unschedule <id> removes one)."
        )


def preview(plan: Plan) -> CallPreview:
    """What the approval card shows of a schedule about to be made (pure)."""
    once = plan.recurrence.at is not None
    return CallPreview(
        facts=(("Prompt", plan.prompt), ("Runs", plan.recurrence.words())),
        times_label="Runs at" if once else "Next runs",
        times=plan.upcoming,
    )


def _local(moment: float, recurrence: Recurrence) -> str:
    """A run's time in the schedule's zone, as ISO 8601 with its offset."""
    return datetime.fromtimestamp(moment, recurrence.zone).isoformat(timespec="minutes")
