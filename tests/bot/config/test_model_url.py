"""The model's base URL is checked at start: a URL the SDK cannot use names its key."""

from __future__ import annotations

import pytest

from bot.config.errors import ConfigError
from bot.config.model_url import model_base_url, url_problem


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1",
        "http://127.0.0.1:11434/v1",
        "http://ollama:11434/v1/",
        "https://user:secret@llm.internal/v1",
        "http://[::1]:8000/v1",
    ],
)
def test_usable_base_urls(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("::::", "must start with http:// or https://"),
        ("localhost:11434/v1", "must start with http:// or https://"),
        ("ftp://llm.internal/v1", "must start with http:// or https://"),
        ("http://", "names no host"),
        ("https:///v1", "names no host"),
        ("http://[::1/v1", "is not a URL"),
        ("http://llm:port/v1", "is not a URL"),
        ("http://llm.internal/v 1", "holds whitespace"),
    ],
)
def test_unusable_base_urls(url: str, problem: str) -> None:
    found = url_problem(url)
    assert found is not None and found.startswith(problem)


def test_the_environment_wins_and_is_named() -> None:
    assert model_base_url(None, None) is None
    assert model_base_url("http://ok/v1", "nonsense") == "http://ok/v1"  # OPENAI_BASE_URL
    assert model_base_url(None, "http://file/v1") == "http://file/v1"
    with pytest.raises(ConfigError) as refused:
        model_base_url(None, "nonsense")
    assert str(refused.value) == (
        "llm.base_url: the model's base URL must start with http:// or https://"
    )
    with pytest.raises(ConfigError) as refused:
        model_base_url("http://user:hunter2@[::1/v1", "http://ok/v1")
    error = str(refused.value)
    assert error.startswith("OPENAI_BASE_URL: the model's base URL is")
    assert "hunter2" not in error
    with pytest.raises(ConfigError) as refused:  # a secret where the port goes
        model_base_url("http://llm:hunter2/v1", None)
    assert "hunter2" not in str(refused.value)
