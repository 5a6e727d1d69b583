"""A turn's tool calls as Slack shows them (pure): task cards inside a streamed answer
(``task_update`` chunks), or rows of a context block in a posted message."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
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
    # A waiting card is final where it is shown: the message is closed while the turn waits,
    # and the call shows again, running, below the approval card once someone decided.
    TaskState.WAITING: "complete",
}


@dataclass
class ToolTask:
    call_id: str
    name: str
    state: TaskState = TaskState.RUNNING
    duration_ms: float | None = None  # None: unknown (a call an earlier attempt ran)
    detail: str = ""  # the output's start when done; the reason when failed
    progress: str = ""  # while running: how far it is, in the tool's words (e.g. "40 %")

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


def task_chunk(task: ToolTask) -> TaskUpdateChunk:
    """The task card of a tool call, as a stream chunk. A tool's words are escaped: they
    can neither mention anyone nor link anywhere."""
    output = details = None
    if task.state is TaskState.RUNNING:
        details = escaped(shorten(task.progress, OUTPUT_CHARS)) or None
    elif task.state is TaskState.DONE:
        output = escaped(shorten(task.detail, OUTPUT_CHARS)) or None
    elif task.state is TaskState.FAILED:
        output = escaped(shorten(task.detail, OUTPUT_CHARS)) or "failed"
    elif task.state is TaskState.STOPPED:
        output = "stopped"
    elif task.state is TaskState.WAITING:
        output = "sent for approval (see below)"
    return TaskUpdateChunk(
        id=task.call_id,
        title=shorten(_title(task), TITLE_CHARS),
        status=CARD_STATUS[task.state],
        details=details,
        output=output,
    )


def _title(task: ToolTask) -> str:
    if task.state is TaskState.DONE and task.duration_ms is not None:
        return f"{task.name} ({duration(task.duration_ms)})"
    return task.name


def task_row(task: ToolTask) -> str:
    """One line of the tasks context block."""
    name = f"`{task.name}`"
    if task.state is TaskState.RUNNING:
        progress = escaped(shorten(" ".join(task.progress.split()), REASON_CHARS))
        return f":hourglass_flowing_sand: {name} {progress or 'running…'}"
    if task.state is TaskState.DONE:
        if task.duration_ms is None:
            return f":white_check_mark: {name} done"
        return f":white_check_mark: {name} done in {duration(task.duration_ms)}"
    if task.state is TaskState.STOPPED:
        return f":black_square_for_stop: {name} stopped"
    if task.state is TaskState.WAITING:
        return f":lock: {name} waiting for approval"
    reason = (
        f": {escaped(shorten(' '.join(task.detail.split()), REASON_CHARS))}" if task.detail else ""
    )
    return f":warning: {name} failed{reason}"


def tasks_text(tasks: list[ToolTask], finished: bool) -> str:
    """The rows of the tasks, within a text object's limit, and a summary once finished."""
    rows = [task_row(task) for task in tasks]
    summary = ""
    if finished and tasks:
        total = sum(task.duration_ms or 0.0 for task in tasks)
        plural = "s" if len(tasks) != 1 else ""
        summary = f"Used {len(tasks)} tool{plural} ({duration(total)} in all)"
    room = TEXT_OBJECT_CHARS - len(summary) - 1
    return "\n".join([*limited(rows, room), *([summary] if summary else [])])


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
        task.state, task.detail = TaskState.FAILED, str(error.get("message") or error["error"])
    else:
        task.state, task.detail = TaskState.DONE, result


def duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"
