"""The config a scenario's replicas run with: the base every scenario starts from, its
overrides merged in, and the keys a build does not know yet left out (noted); and the
Redis keys the harness and the fault tools agree on."""

from __future__ import annotations

import copy
from typing import Any

import pydantic

from bot.config.schema import AppConfig

PREFIX = "faults:"
RUNS_KEY = "fault-runs"  # outside the bot's prefix, so no scan of the bot's keys sees it
BASE_CONFIG: dict[str, Any] = {
    "redis": {"key_prefix": PREFIX},
    "llm": {"model": "fake-model", "max_retries": 1},
    "queue": {"claim_idle_s": 10, "lock_ttl_s": 10},
    "slack": {"edit_interval_s": 0.5},
    "tools": {"modules": ["tests.fakes.fault_tools"], "builtins": []},
}
# Keys the coming turn lifecycle adds. A build that does not know one yet runs without it
# (noted in the report) instead of refusing to start, so the scenario still shows how
# today's code behaves.
PROMISED_KEYS = {("queue", "shutdown_grace_s"), ("queue", "deliver_timeout_s")}


def merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, section by section."""
    result = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def supported(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``config`` without the promised keys this build rejects; notes saying which."""
    try:
        AppConfig.model_validate(config)
        return config, []
    except pydantic.ValidationError as exc:
        errors = exc.errors()
    unknown = {tuple(e["loc"]) for e in errors if e["type"] == "extra_forbidden"}
    if len(unknown) != len(errors) or not unknown <= PROMISED_KEYS:
        raise ValueError(f"the scenario's config is invalid: {errors}")
    trimmed = copy.deepcopy(config)
    notes = []
    for section, key in sorted((str(loc[0]), str(loc[1])) for loc in unknown):
        value = trimmed[section].pop(key)
        notes.append(f"this build does not know {section}.{key} (wanted {value}); ran without it")
    return trimmed, notes
