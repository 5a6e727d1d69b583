"""The model's base URL is checked at start: a URL the SDK cannot use names its key."""

from __future__ import annotations

import pytest

from bot.config.model_url import model_url_error, url_problem


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
    assert model_url_error(None, None) is None
    assert model_url_error("http://ok/v1", "nonsense") is None  # OPENAI_BASE_URL is used
    assert model_url_error(None, "nonsense") == (
        "llm.base_url: the model's base URL must start with http:// or https://"
    )
    error = model_url_error("http://user:hunter2@[::1/v1", "http://ok/v1")
    assert error is not None and error.startswith("OPENAI_BASE_URL: the model's base URL is")
    assert "hunter2" not in error
