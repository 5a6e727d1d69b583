"""Where a process listens (pure)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Listen:
    """The app's host and port (HTTP mode: Slack's events, /healthz and /readyz; Socket
    Mode: the endpoints, /metrics included), and ``metrics_port`` for the endpoints on a
    listener of their own (HTTP mode: the only one with /metrics)."""

    host: str = "0.0.0.0"
    port: int = 3000
    metrics_port: int | None = None
