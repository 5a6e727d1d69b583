"""Split a long markdown answer into messages Slack accepts, without cutting anything off.

Cuts fall between paragraphs; a code block or a table is never cut while it fits in one
message. One that does not fit is split between lines (code, re-fenced with its language)
or between rows (tables, with the header repeated), so every part still renders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.slack.blocks.limits import MARKDOWN_PART_CHARS

_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")


@dataclass(frozen=True)
class _Segment:
    kind: str  # "code", "table" or "text"
    text: str  # including its trailing newline(s)


def split_markdown(text: str, limit: int = MARKDOWN_PART_CHARS) -> list[str]:
    """Parts of at most ``limit`` characters that together hold all of ``text``."""
    if limit < 200:
        raise ValueError("limit is too small to split markdown sensibly")
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    current = ""
    for segment in _segments(text):
        if len(current) + len(segment.text) <= limit:
            current += segment.text
            continue
        if current.strip():
            parts.append(current.rstrip())
        current = ""
        pieces = [segment.text] if len(segment.text) <= limit else _split_segment(segment, limit)
        for piece in pieces[:-1]:
            parts.append(piece.rstrip())
        current = pieces[-1]
    if current.strip():
        parts.append(current.rstrip())
    return parts


def _segments(text: str) -> list[_Segment]:
    lines = text.splitlines(keepends=True)
    segments: list[_Segment] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            end = index + 1
            while end < len(lines) and not lines[end].strip().startswith(fence.group(1)):
                end += 1
            end = min(end + 1, len(lines))
            segments.append(_Segment("code", "".join(lines[index:end])))
            index = end
        elif _TABLE_ROW.match(line):
            end = index
            while end < len(lines) and _TABLE_ROW.match(lines[end]):
                end += 1
            segments.append(_Segment("table", "".join(lines[index:end])))
            index = end
        else:
            end = index
            while (
                end < len(lines)
                and not _FENCE.match(lines[end])
                and not _TABLE_ROW.match(lines[end])
            ):
                end += 1
                if not lines[end - 1].strip():
                    break  # a blank line ends the paragraph
            segments.append(_Segment("text", "".join(lines[index:end])))
            index = end
    return segments


def _split_segment(segment: _Segment, limit: int) -> list[str]:
    if segment.kind == "code":
        return _split_code(segment.text, limit)
    if segment.kind == "table":
        return _split_table(segment.text, limit)
    return _pack(_split_long_lines(segment.text.splitlines(keepends=True), limit), limit, "", "")


def _split_code(text: str, limit: int) -> list[str]:
    lines = text.splitlines(keepends=True)
    opening = lines[0] if lines[0].endswith("\n") else lines[0] + "\n"
    marker = _FENCE.match(opening)
    fence = marker.group(1) if marker else "```"
    closed = len(lines) > 1 and lines[-1].strip().startswith(fence)
    body = lines[1:-1] if closed else lines[1:]
    closing = fence + "\n"
    room = limit - len(opening) - len(closing)
    return _pack(_split_long_lines(body, room), limit, opening, closing)


def _split_table(text: str, limit: int) -> list[str]:
    lines = text.splitlines(keepends=True)
    has_rule = len(lines) > 1 and _TABLE_RULE.match(lines[1]) is not None
    header = "".join(lines[:2]) if has_rule else ""
    rows = lines[2:] if has_rule else lines
    if len(header) > limit // 2:
        header = ""  # a monstrous header is not worth repeating
        rows = lines
    return _pack(_split_long_lines(rows, limit - len(header)), limit, header, "")


def _split_long_lines(lines: list[str], limit: int) -> list[str]:
    """Break any line longer than ``limit`` at a sentence end, a space, or hard."""
    out: list[str] = []
    for line in lines:
        while len(line) > limit:
            cut = max(line.rfind(". ", 0, limit) + 1, line.rfind(" ", 0, limit))
            if cut <= limit // 2:
                cut = limit
            out.append(line[:cut] + "\n")
            line = line[cut:].lstrip(" ")
        out.append(line)
    return out


def _pack(lines: list[str], limit: int, prefix: str, suffix: str) -> list[str]:
    """Group lines into pieces of at most ``limit`` characters, each wrapped in prefix/suffix."""
    pieces: list[str] = []
    current = ""
    room = limit - len(prefix) - len(suffix)
    for line in lines:
        if current and len(current) + len(line) > room:
            pieces.append(prefix + current + suffix)
            current = ""
        current += line
    if current or not pieces:
        if current and not current.endswith("\n") and suffix:
            current += "\n"
        pieces.append(prefix + current + suffix)
    return pieces
