"""A role a person holds, and where it came from (for ``whoami`` and the Home tab)."""

from __future__ import annotations

from dataclasses import dataclass

CONFIG = "listed in the config"
WORKSPACE_ADMIN = "Slack workspace admin or owner"
DEFAULT = "default role"


@dataclass(frozen=True)
class HeldRole:
    role: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "source": self.source}


def user_group(group: str) -> str:
    return f"member of user group {group}"


def granted_by(user: str) -> str:
    return f"granted by <@{user}>"


def role_names(held: list[HeldRole]) -> list[str]:
    """Each role once, in the order first held."""
    return list(dict.fromkeys(h.role for h in held))
