"""Rebuild a whole response from streamed Chat Completions chunks, read as the plain dicts
the server sent (bot/llm/sse.py).

Tool calls arrive as deltas keyed by ``index``: the first delta of a call carries its id and
name, later ones carry pieces of the arguments. Servers differ: some omit ``index``, some
reuse index 0 for every call but give each a new id, some repeat the name in every delta.
All of these rebuild to the calls the model meant.

What is kept of a call is bounded: its arguments up to just past ``ARGUMENTS_MAX_BYTES``
(the loop refuses them as too large; the rest of the stream is read and dropped), its name
to ``NAME_MAX_CHARS``. Arguments sent as a JSON value rather than text are encoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.llm.response import ARGUMENTS_MAX_BYTES, NAME_MAX_CHARS, ToolCall, arguments_text
from bot.llm.usage import Usage


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    size: int = 0  # bytes of arguments kept

    def add_arguments(self, piece: str) -> None:
        """Keep ``piece``, until the arguments are larger than any call may send."""
        if self.size > ARGUMENTS_MAX_BYTES:
            return
        self.arguments.append(piece)
        self.size += len(piece.encode("utf-8", "replace"))


class StreamAccumulator:
    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: list[_PartialCall] = []
        self._slot_by_index: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model = ""

    def add(self, chunk: dict[str, Any]) -> str:
        """Take one chunk; return the text it added (empty when none)."""
        model = chunk.get("model")
        if model:
            self.model = model
        usage = chunk.get("usage")
        if usage and isinstance(usage, dict):
            self.usage = Usage.from_api(usage)
        added = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue  # n > 1 is never requested; ignore stray choices
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if content:
                    self._text.append(content)
                    added.append(content)
                for call_delta in delta.get("tool_calls") or ():
                    if isinstance(call_delta, dict):
                        self._add_call_delta(call_delta)
            finish_reason = choice.get("finish_reason")
            if finish_reason:
                self.finish_reason = finish_reason
        return "".join(added)

    def _add_call_delta(self, delta: dict[str, Any]) -> None:
        function = delta.get("function")
        if not isinstance(function, dict):
            function = {}
        name = str(function.get("name") or "")
        arguments = arguments_text(function.get("arguments"))
        call_id = delta.get("id") or ""
        index = delta.get("index")

        slot = self._slot_for(index, call_id)
        call = self._calls[slot]
        if call_id and not call.id:
            call.id = call_id
        if name and name != call.name:
            call.name = (name if not call.name else call.name + name)[:NAME_MAX_CHARS]
        if arguments:
            call.add_arguments(arguments)

    def _slot_for(self, index: int | None, call_id: str) -> int:
        if index is None:
            # No index: a new id starts a new call, anything else continues the last one.
            if not self._calls or (call_id and call_id != self._calls[-1].id):
                self._calls.append(_PartialCall())
            return len(self._calls) - 1
        slot = self._slot_by_index.get(index)
        if slot is None or (call_id and self._calls[slot].id and call_id != self._calls[slot].id):
            self._calls.append(_PartialCall())
            slot = len(self._calls) - 1
            self._slot_by_index[index] = slot
        return slot

    @property
    def text(self) -> str:
        return "".join(self._text)

    def tool_calls(self) -> list[ToolCall]:
        calls = []
        for call in self._calls:
            if not call.name and not call.arguments:
                continue
            calls.append(ToolCall(id=call.id, name=call.name, arguments="".join(call.arguments)))
        return calls
