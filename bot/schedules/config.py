"""The ``schedules:`` section of the config file: the default time zone, how often a
schedule may run, how many each person may have, how late a missed run still runs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.config.zones import known_zone


class SchedulesConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timezone: str = Field(
        default="UTC",
        description="A schedule's time zone when the person's own Slack time zone is unknown "
        "(an IANA name).",
    )
    min_interval_s: int = Field(
        default=3600, ge=60, description="A recurring schedule's runs are at least this far apart."
    )
    max_per_person: int = Field(
        default=10, ge=1, description="Schedules a person may have (active or paused)."
    )
    catch_up_s: int = Field(
        default=3600,
        ge=0,
        description="A run missed (no replica up, Redis down) still runs, once, if it is at "
        "most this late; older ones are skipped and counted.",
    )
    one_off_lead_s: int = Field(
        default=10, ge=1, description="A one-off is at least this far ahead when it is made."
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        return known_zone(name)
