"""The one error a bad configuration raises (kept apart from the schema, so a process can
name it before the configuration's models are loaded)."""

from __future__ import annotations


class ConfigError(Exception):
    """The configuration is wrong. The message names the file, the key and what was expected."""
