"""The model's base URL, checked at start (pure): the SDK builds its client from it only
when the model is first called (bot/llm/deferred.py), and a URL it cannot use must stop
every command at start-up, naming where it came from, not fail each turn later."""

from __future__ import annotations

from urllib.parse import urlsplit


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a model's base URL, or None. The URL itself is not repeated:
    it may hold credentials."""
    if any(c.isspace() for c in url):
        return "holds whitespace"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError as exc:
        return f"is not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "names no host"
    return None


def model_url_error(environment_url: str | None, config_url: str | None) -> str | None:
    """The message for the base URL in use (OPENAI_BASE_URL wins over ``llm.base_url``),
    or None when it is usable or none is set (the SDK's default)."""
    for name, url in (("OPENAI_BASE_URL", environment_url), ("llm.base_url", config_url)):
        if url:
            problem = url_problem(url)
            return None if problem is None else f"{name}: the model's base URL {problem}"
    return None
