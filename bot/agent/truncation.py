"""Cut long tool output to a character budget, keeping its head and its tail."""

from __future__ import annotations


def truncate_middle(text: str, limit: int) -> str:
    """Keep about two thirds of ``limit`` from the head and one third from the tail.

    The result is at most ``limit`` characters (for limits that fit the marker) and says
    how many characters were dropped.
    """
    if len(text) <= limit:
        return text
    dropped = len(text) - limit
    while True:
        marker = f"\n[... {dropped} characters dropped ...]\n"
        budget = max(limit - len(marker), 0)
        head = (budget * 2) // 3
        tail = budget - head
        actual = len(text) - head - tail
        if actual == dropped:
            break
        dropped = actual
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")
