"""Read and validate the config file; a bad one stops start-up with the key named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bot.config.errors import ConfigError
from bot.config.schema import AppConfig


def load_config(path: Path | None) -> AppConfig:
    """Load ``path``; with no path, the defaults."""
    if path is None:
        return AppConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror})") from None
    return parse_config(text, str(path))


def parse_config(text: str, origin: str = "config") -> AppConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{origin}: not valid YAML{where}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}: expected a mapping of keys at the top, got {_kind(data)}")
    try:
        return AppConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, origin)) from None


def format_validation_error(exc: ValidationError, origin: str) -> str:
    lines = [f"{origin}: invalid configuration"]
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; README.md lists every key)"
        elif error["type"] != "missing" and not isinstance(error.get("input"), dict | type(None)):
            message += f" (got {_short(error['input'])})"
        lines.append(f"  {key}: {message}")
    return "\n".join(lines)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )
