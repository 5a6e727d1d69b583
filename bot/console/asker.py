"""Asking the person at the console a question an MCP server asks (elicitation): each field
on its own line, checked as it is typed; ``/decline`` declines, and no answer within the
question's time is a decline. A URL question shows an https page with its host, and declines
any other without showing it."""

from __future__ import annotations

import time
from typing import Any, TextIO

from bot.console.lines import LineReader
from tools.form_fields import FormField, answer_problems, form_fields, parse_value
from tools.questions import Answer, Question, page_host

DECLINE = "/decline"


class _Declined(Exception):
    pass


class ConsoleAsker:
    def __init__(self, lines: LineReader, err: TextIO) -> None:
        self.lines = lines
        self.err = err

    async def ask(self, question: Question) -> Answer:
        deadline = time.monotonic() + question.timeout_s
        self._say(f"  ? {question.asker} asks: {question.message}")
        try:
            if question.url is not None:
                host = page_host(question.url)
                if host is None:  # only an https page is ever shown
                    self._say("    (it asks to open a page that is not an https address: declined)")
                    return Answer.declined()
                self._say(f"    open: {question.url}")
                self._say(f"    (a page on {host})")
                return await self._yes_no("    did you open it? [y/N] ", deadline)
            fields = form_fields(question.schema)
            if not fields:
                return await self._yes_no("    accept? [y/N] ", deadline)
            self._say(f"    ({DECLINE} declines)")
            content: dict[str, Any] = {}
            properties = question.schema.get("properties") or {}
            for field in fields:
                value = await self._field(field, properties.get(field.name) or {}, deadline)
                if value is not None:
                    content[field.name] = value
        except TimeoutError:
            self._say("    (no answer in time: declined)")
            return Answer.declined()
        except _Declined:
            return Answer.declined()
        problems = answer_problems(question.schema, content)
        if problems:
            self._say("    " + "; ".join(problems) + " (declined)")
            return Answer.declined()
        return Answer("accept", content)

    async def _yes_no(self, prompt: str, deadline: float) -> Answer:
        text = await self._read(prompt, deadline)
        return Answer("accept", None) if text.lower() in ("y", "yes") else Answer.declined()

    async def _field(self, field: FormField, spec: dict[str, Any], deadline: float) -> Any:
        """One field's value, asked again until it is readable and fits."""
        alone = {"type": "object", "properties": {field.name: spec}}
        while True:
            text = await self._read(f"    {prompt_for(field)}: ", deadline)
            if not text:
                if field.default is not None:
                    return field.default
                if not field.required:
                    return None
                self._say("    (required)")
                continue
            try:
                value = parse_value(field, text)
            except ValueError as exc:
                self._say(f"    ({exc})")
                continue
            problems = answer_problems(alone, {field.name: value})
            if not problems:
                return value
            self._say(f"    ({'; '.join(problems)})")

    async def _read(self, prompt: str, deadline: float) -> str:
        self.err.write(prompt)
        self.err.flush()
        line = await self.lines.readline(max(deadline - time.monotonic(), 0.0))
        if not line:
            raise _Declined  # end of input
        text = line.strip()
        if text == DECLINE:
            raise _Declined
        return text

    def _say(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()


def prompt_for(field: FormField) -> str:
    """``label (what to type) [default]``."""
    kinds = {
        "boolean": "y/n",
        "number": "a number",
        "integer": "a whole number",
        "choices": "comma-separated",
    }
    what = kinds.get(field.kind, field.format or "")
    if field.kind in ("choice", "choices"):
        listed = ", ".join(f"{i}) {label}" for i, (_, label) in enumerate(field.options, 1))
        what = f"{what}: {listed}" if what else listed
    parts = [field.label]
    if what:
        parts.append(f"({what})")
    if field.default is not None:
        parts.append(f"[{field.default}]")
    if not field.required:
        parts.append("optional")
    return " ".join(parts)
