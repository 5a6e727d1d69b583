"""How ``/agent schedules``, ``pause``, ``resume``, ``unschedule`` and the Home tab word a
person's schedules (pure): each with its id, its prompt shortened and escaped, its
recurrence in words, where it posts, its next run and its last (Slack's ``<!date^…>``: each
reader sees their own time zone) with the run's outcome, and a paused one's reason."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from bot.slack.blocks.dates import slack_date
from bot.slack.blocks.escape import escaped, visible
from bot.slack.blocks.limits import MESSAGE_TEXT_CHARS, limited, shorten
from bot.state.schedules import Schedule

PROMPT_SHOWN = 80  # characters of a schedule's prompt a list shows
PAUSED = "paused"


def schedule_id(word: str) -> str:
    """An id as typed (`` `S3` ``, ``s3``, ``3``) as the store names it (``s3``)."""
    said = word.strip().strip("`").lower()
    return f"s{said}" if said.isdigit() else said


def prompt_words(prompt: str) -> str:
    """The prompt on one line, shortened, quoted; never a mention, link or hidden character."""
    return f"“{escaped(visible(shorten(' '.join(prompt.split()), PROMPT_SHOWN)))}”"


def posts_in(channel: str) -> str:
    return "in a direct message" if channel.startswith("D") else f"in <#{channel}>"


def state_words(schedule: Schedule) -> str:
    """When it runs next, or why it does not: "next <!date…>", "*paused*: owner left the
    workspace", "*paused* by <@U1>", "ended"."""
    if schedule.state == "ended":
        return "ended"
    if schedule.state == PAUSED:
        reason = schedule.reason.strip()
        if not reason:
            return f"*{PAUSED}*"
        if reason.startswith(PAUSED):  # "paused by <@U1>"
            return f"*{PAUSED}*{reason[len(PAUSED) :]}"
        return f"*{PAUSED}*: {reason}"
    if schedule.next_at is None:
        return "no run ahead"
    return f"next {slack_date(schedule.next_at)}"


def last_words(schedule: Schedule) -> str:
    """The last run and its outcome, and the runs missed since (carried to the next run)."""
    if schedule.last_at is None:
        said = "not run yet"
    else:
        outcome = f" ({schedule.last_outcome})" if schedule.last_outcome else ""
        said = f"last {slack_date(schedule.last_at)}{outcome}"
    if schedule.missed:
        said += f", {runs(schedule.missed)} missed since"
    return said


def runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def schedule_row(schedule: Schedule) -> str:
    """One schedule on one line, for ``/agent schedules``."""
    return (
        f"• `{schedule.id}` — {prompt_words(schedule.prompt)} {posts_in(schedule.channel)} — "
        f"{schedule.recurrence.words()} — {state_words(schedule)} — {last_words(schedule)}"
    )


def own_list(schedules: Sequence[Schedule], command: str) -> str:
    """A person's own schedules (as the store lists them: oldest first)."""
    if not schedules:
        return (
            "You have no schedules. Ask me in a message to do something at a time or "
            "regularly (“every weekday at 9:00, summarise yesterday's incidents”)."
        )
    head = (
        f"*Your schedules* ({_count(len(schedules))}; `{command} pause <id>`, "
        f"`{command} resume <id>`, `{command} unschedule <id>`):"
    )
    rows = [schedule_row(s) for s in schedules]
    return "\n".join([head, *limited(rows, MESSAGE_TEXT_CHARS - len(head) - 1)])


def everyone_list(schedules: Sequence[Schedule]) -> str:
    """Everyone's schedules in the workspace, grouped by owner (each's oldest first), for an
    admin."""
    if not schedules:
        return "Nobody has a schedule."
    head = f"*Everyone's schedules* ({_count(len(schedules))}):"
    rows: list[str] = []
    by_owner = sorted(schedules, key=lambda s: s.owner)
    for owner, theirs in groupby(by_owner, key=lambda s: s.owner):
        mine = list(theirs)
        rows.append(f"*<@{owner}>* ({len(mine)}):")
        rows += [schedule_row(s) for s in mine]
    return "\n".join([head, *limited(rows, MESSAGE_TEXT_CHARS - len(head) - 1)])


def home_rows(schedules: Sequence[Schedule]) -> list[str]:
    """A person's own schedules on the Home tab: id, prompt, words and the next run."""
    return [
        f"• `{s.id}` — {prompt_words(s.prompt)} — {s.recurrence.words()} — {state_words(s)}"
        for s in schedules
    ]


# --- what a change did, or why it did nothing ---------------------------------------------


def unknown(which: str, command: str) -> str:
    return f"There is no schedule `{escaped(which)}`. `{command} schedules` lists yours."


def not_theirs(schedule: Schedule, verb: str) -> str:
    return (
        f"Sorry, only <@{schedule.owner}>, who made schedule `{schedule.id}`, or an admin can "
        f"{verb} it."
    )


def paused(schedule: Schedule, command: str) -> str:
    return (
        f"Paused schedule `{schedule.id}` {prompt_words(schedule.prompt)}: it does not run "
        f"until `{command} resume {schedule.id}`."
    )


def already_paused(schedule: Schedule) -> str:
    return f"Schedule `{schedule.id}` is already {state_words(schedule)}."


def ended(schedule: Schedule, command: str) -> str:
    return (
        f"Schedule `{schedule.id}` has ended (it ran once). `{command} unschedule "
        f"{schedule.id}` removes it from the list."
    )


def resumed(schedule: Schedule) -> str:
    return f"Resumed schedule `{schedule.id}`: {state_words(schedule)}."


def not_paused(schedule: Schedule) -> str:
    return f"Schedule `{schedule.id}` is not paused: {state_words(schedule)}."


def passed(schedule: Schedule, command: str) -> str:
    """A paused one-off whose time has gone by."""
    return (
        f"Schedule `{schedule.id}` was to run {schedule.recurrence.words()}, which has passed: "
        f"it cannot resume. `{command} unschedule {schedule.id}` removes it."
    )


def removed(schedule: Schedule) -> str:
    return (
        f"Removed schedule `{schedule.id}` {prompt_words(schedule.prompt)}: it will not run again."
    )


def _count(n: int) -> str:
    return f"{n} schedule" if n == 1 else f"{n} schedules"
