"""The refusal of a schedule's input: a sentence the model can relay, naming what to fix."""

from __future__ import annotations


class ScheduleInputError(ValueError):
    """Bad input for a schedule; ``args[0]`` is one sentence saying what to fix."""
