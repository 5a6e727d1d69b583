"""The ``roles:`` section of the config file."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from permissions.budget import Budget


class RoleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    admin: bool = Field(default=False, description="May use the admin subcommands.")
    default: bool = Field(default=False, description="Held by everyone who matches no role.")
    members: list[str] = Field(
        default_factory=list, description="Slack user IDs (U...) and user-group IDs (S...)."
    )
    workspace_admins: bool = Field(
        default=False, description="Slack workspace admins and owners hold this role."
    )
    tools: list[str] = Field(
        default_factory=list, description='Tool name globs; "!glob" denies and always wins.'
    )
    channels: list[str] | None = Field(
        default=None, description="Channel ID globs where this role's tools may run."
    )
    approval_exempt: list[str] = Field(
        default_factory=list,
        description="Tool name globs this role may run without a person's approval.",
    )
    budget: Budget | None = Field(
        default=None, description="Daily limits for each person holding this role."
    )
