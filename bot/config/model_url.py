"""The model's base URL, checked at start (pure): the SDK builds its client from it only
when the model is first called (bot/llm/deferred.py), and a URL it cannot use must stop
every command at start-up, naming where it came from, not fail each turn later."""

from __future__ import annotations

from urllib.parse import urlsplit

from bot.config.errors import ConfigError


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a model's base URL, or None. The URL itself is not repeated:
    it may hold credentials."""
    if any(c.isspace() for c in url):
        return "holds whitespace"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:  # its words may quote a part of the URL
        return "is not a URL"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "names no host"
    return None


def model_base_url(environment_url: str | None, config_url: str | None) -> str | None:
    """The model's base URL: OPENAI_BASE_URL, else ``llm.base_url``, else None (the SDK's
    default). :class:`ConfigError`, naming the one in use, when it is unusable."""
    for name, url in (("OPENAI_BASE_URL", environment_url), ("llm.base_url", config_url)):
        if url:
            problem = url_problem(url)
            if problem is not None:
                raise ConfigError(f"{name}: the model's base URL {problem}")
            return url
    return None
