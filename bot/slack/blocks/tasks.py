"""A turn's tool calls as Slack shows them (pure): task cards inside a streamed answer
(``task_update`` chunks), or rows of a context block in a posted message.

Where several people read the thread (``private`` false: a channel, a group DM, Slack
Connect guests), a call shows its name, its state and its duration, never what it returned:
no output, no error message (it may quote data: the error's kind instead), no words of the
tool's progress (its numbers only). Where the person who asked reads alone (their DM with
the bot), the output's start shows as well. A call waiting for a person's approval shows
"waiting for approval" (pending), never complete, until the turn goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from slack_sdk.models.messages.chunk import TaskUpdateChunk

from bot.slack.blocks.escape import escaped
from bot.slack.blocks.limits import TEXT_OBJECT_CHARS, limited, shorten

TITLE_CHARS = 80
OUTPUT_CHARS = 300
REASON_CHARS = 120


class TaskState(StrEnum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"  # cut off: the turn was stopped, or its attempt ended
    WAITING = "waiting"  # it waits for a person's approval


# How a task's state reads to Slack's task cards.
CARD_STATUS = {
    TaskState.RUNNING: "in_progress",
    TaskState.DONE: "complete",
    TaskState.FAILED: "error",
    TaskState.STOPPED: "error",
    # Not done: the message is closed while the turn waits, and once someone decided the
    # call runs below the approval card and this card takes its outcome (catch_up).
    TaskState.WAITING: "pending",
}
WAITING_TEXT = "waiting for approval"


@dataclass
class ToolTask:
    call_id: str
    name: str
    state: TaskState = TaskState.RUNNING
    duration_ms: float | None = None  # None: unknown (a call an earlier attempt ran)
    detail: str = ""  # the output's start when done; the reason when failed
    progress: str = ""  # while running: how far it is, in the tool's words (e.g. "40 %")
    error: str = ""  # when failed: the error's kind (e.g. "TimeoutError"), never its words
    amount: str = ""  # while running: how far it is, in numbers only (e.g. "40 %")

    @property
    def open(self) -> bool:
        return self.state is TaskState.RUNNING

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> ToolTask:
        """As the delivery record keeps it (fields it does not know are left out)."""
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in known}
        return cls(**{**kept, "state": TaskState(kept.get("state", TaskState.RUNNING))})

    def to_record(self) -> dict[str, Any]:
        return {**vars(self), "state": self.state.value}


def task_chunk(task: ToolTask, *, private: bool) -> TaskUpdateChunk:
    """The task card of a tool call, as a stream chunk; ``private``: only the person who
    asked reads it (else no output shows). A tool's words are escaped: they can neither
    mention anyone nor link anywhere."""
    output = details = None
    if task.state is TaskState.RUNNING:
        details = escaped(shorten(_progress(task, private=private), OUTPUT_CHARS)) or None
    elif task.state is TaskState.DONE:
        output = (escaped(shorten(task.detail, OUTPUT_CHARS)) or None) if private else None
    elif task.state is TaskState.FAILED:
        output = escaped(shorten(_reason(task, private=private), OUTPUT_CHARS)) or "failed"
    elif task.state is TaskState.STOPPED:
        output = "stopped"
    elif task.state is TaskState.WAITING:
        details = f"{WAITING_TEXT} (see the card below)"
    return TaskUpdateChunk(
        id=task.call_id,
        title=shorten(_title(task), TITLE_CHARS),
        status=CARD_STATUS[task.state],
        details=details,
        output=output,
    )


def _progress(task: ToolTask, *, private: bool) -> str:
    return task.progress if private else task.amount


def _reason(task: ToolTask, *, private: bool) -> str:
    """Why a call failed: its message where the person alone reads, else its kind (a
    message may quote what the tool saw)."""
    if private:
        return task.detail
    return f"failed ({task.error})" if task.error else "failed"


def _title(task: ToolTask) -> str:
    if task.state is TaskState.DONE and task.duration_ms is not None:
        return f"{task.name} ({duration(task.duration_ms)})"
    return task.name


def task_row(task: ToolTask, *, private: bool) -> str:
    """One line of the tasks context block (``private``: as in :func:`task_chunk`)."""
    name = f"`{task.name}`"
    if task.state is TaskState.RUNNING:
        said = " ".join(_progress(task, private=private).split())
        progress = escaped(shorten(said, REASON_CHARS))
        return f":hourglass_flowing_sand: {name} {progress or 'running…'}"
    if task.state is TaskState.DONE:
        if task.duration_ms is None:
            return f":white_check_mark: {name} done"
        return f":white_check_mark: {name} done in {duration(task.duration_ms)}"
    if task.state is TaskState.STOPPED:
        return f":black_square_for_stop: {name} stopped"
    if task.state is TaskState.WAITING:
        return f":lock: {name} {WAITING_TEXT}"
    if not private:
        return f":warning: {name} failed" + (f" ({escaped(task.error)})" if task.error else "")
    reason = (
        f": {escaped(shorten(' '.join(task.detail.split()), REASON_CHARS))}" if task.detail else ""
    )
    return f":warning: {name} failed{reason}"


def tasks_text(tasks: list[ToolTask], finished: bool, *, private: bool) -> str:
    """The rows of the tasks, within a text object's limit, and a summary once finished."""
    rows = [task_row(task, private=private) for task in tasks]
    summary = ""
    if finished and tasks:
        total = sum(task.duration_ms or 0.0 for task in tasks)
        plural = "s" if len(tasks) != 1 else ""
        summary = f"Used {len(tasks)} tool{plural} ({duration(total)} in all)"
    room = TEXT_OBJECT_CHARS - len(summary) - 1
    return "\n".join([*limited(rows, room), *([summary] if summary else [])])


def with_output(tasks: Iterable[ToolTask]) -> bool:
    """Whether any of ``tasks`` ended with an output (or an error) a person may open."""
    return any(task.state in (TaskState.DONE, TaskState.FAILED) for task in tasks)


def settle_task(task: ToolTask, result: str | None) -> None:
    """A task whose end this attempt did not see: done, failed (with the reason), or
    stopped when the turn has no result for it."""
    if result is None:
        task.state = TaskState.STOPPED
        return
    try:
        error = json.loads(result)
    except ValueError:
        error = None
    if isinstance(error, dict) and "error" in error:
        task.state, task.error = TaskState.FAILED, str(error["error"])
        task.detail = shorten(str(error.get("message") or error["error"]), OUTPUT_CHARS)
    else:
        task.state, task.detail = TaskState.DONE, shorten(result, OUTPUT_CHARS)


def catch_up(
    shown: list[ToolTask], now: Mapping[str, ToolTask], results: Mapping[str, str]
) -> list[ToolTask] | None:
    """The cards of a message closed while its calls waited for approval, each waiting one
    brought to how the call ended since: as this segment's card of the same call shows it
    (``now``), else from the turn's ``results``. None when nothing moved on (still waiting,
    or nothing waited)."""
    moved, changed = [], False
    for task in shown:
        if task.state is not TaskState.WAITING:
            moved.append(task)
            continue
        later = now.get(task.call_id)
        if later is not None and later.state not in (TaskState.RUNNING, TaskState.WAITING):
            moved.append(replace(later))
            changed = True
        elif task.call_id in results:
            settled = replace(task)
            settle_task(settled, results[task.call_id])
            moved.append(settled)
            changed = True
        else:
            moved.append(task)
    return moved if changed else None


def duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"
