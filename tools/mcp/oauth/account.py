"""Whose connection: a person of a workspace. Apart from the token types, which need the MCP
SDK, so that a process with no server that signs people in never loads it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Account:
    """Whose connection: a Slack person in a workspace (the console's team is ``console``)."""

    team: str
    user: str
