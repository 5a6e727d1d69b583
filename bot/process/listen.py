"""Where a process listens (pure)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Listen:
    """The app's host and port (HTTP mode: Slack's events and the endpoints; Socket Mode:
    the endpoints), and ``metrics_port`` for the endpoints on a listener of their own."""

    host: str = "0.0.0.0"
    port: int = 3000
    metrics_port: int | None = None
