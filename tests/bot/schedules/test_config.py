"""The ``schedules:`` section: its defaults, and errors that name the key."""

from __future__ import annotations

import pytest

from bot.config.errors import ConfigError
from bot.config.loading import parse_config
from bot.config.schema import AppConfig
from bot.schedules.config import SchedulesConfig


def test_the_defaults() -> None:
    config = AppConfig().schedules
    assert config == SchedulesConfig()
    assert (config.timezone, config.min_interval_s, config.max_per_person) == ("UTC", 3600, 10)
    assert (config.catch_up_s, config.one_off_lead_s) == (3600, 10)


def test_a_section_is_read() -> None:
    text = "schedules: {timezone: Europe/Berlin, min_interval_s: 60, catch_up_s: 0}"
    config = parse_config(text, "acme.yaml").schedules
    assert (config.timezone, config.min_interval_s, config.catch_up_s) == ("Europe/Berlin", 60, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "schedules: {timezone: Mars/Olympus}",
            "schedules.timezone: not a time zone the IANA database knows",
        ),
        ("schedules: {min_interval_s: 59}", "schedules.min_interval_s: Input should be greater"),
        ("schedules: {max_per_person: 0}", "schedules.max_per_person: Input should be greater"),
        ("schedules: {catch_up_s: -1}", "schedules.catch_up_s: Input should be greater"),
        ("schedules: {one_off_lead_s: 0}", "schedules.one_off_lead_s: Input should be greater"),
        ("schedules: {every: 1}", "schedules.every: unknown key"),
    ],
)
def test_errors_name_the_key(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "acme.yaml")
    assert str(caught.value).startswith("acme.yaml: ")
    assert expected in str(caught.value)
