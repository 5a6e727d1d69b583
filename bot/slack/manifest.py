"""manifest.yml, the Slack app manifest at the project's root: what the app asks Slack for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"


def read_manifest(path: Path = MANIFEST) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def bot_scopes(manifest: dict[str, Any]) -> set[str]:
    """The bot token scopes the manifest asks for."""
    scopes = ((manifest.get("oauth_config") or {}).get("scopes") or {}).get("bot") or []
    return {str(s) for s in scopes}
