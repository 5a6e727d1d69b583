"""Which calls need a person's approval, and who may give it (pure): the one answer every
surface asks (Slack's turns, ``slack-agent chat``, ``slack-agent tools``), through
``Policy.needs_approval`` and ``Policy.may_decide`` (permissions/policy.py).

A call needs approval when its tool says so (``confirm``: a Python tool marked
``confirm=True``, or an MCP tool whose server's ``approval`` setting and annotations say it
may change things), or when it matches a glob of ``approval.tools``; unless one of the
roles its person holds exempts it (``roles.NAME.approval_exempt``). Nothing the model or a
tool says can lift it: only the config, which an admin writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field, field_validator

from permissions.config import RoleConfig
from permissions.patterns import allows
from tools.definition import Tool

REQUESTER = "requester"
ADMINS = "admins"
ROLE = "role:"


class ApprovalConfig(BaseModel):
    """The ``approval:`` section of the config file."""

    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(
        default_factory=list, description="Tool name globs that always need approval."
    )
    approvers: list[str] = Field(
        default_factory=lambda: [REQUESTER, ADMINS],
        description="Who may decide: requester, admins, role:NAME.",
    )
    timeout_s: float = Field(
        default=900.0, gt=0, le=7 * 24 * 3600, description="Then the request expires."
    )
    max_open_per_person: int = Field(
        default=5,
        ge=1,
        le=1000,
        description=(
            "The most requests one person's turns may have waiting for a decision at once, "
            "across threads; past it a call is refused to the model and no card is posted."
        ),
    )

    @field_validator("approvers")
    @classmethod
    def _known_approvers(cls, approvers: list[str]) -> list[str]:
        for approver in approvers:
            if approver not in (REQUESTER, ADMINS) and not (
                approver.startswith(ROLE) and len(approver) > len(ROLE)
            ):
                raise ValueError(
                    f"unknown approver {approver!r}: use requester, admins or role:NAME"
                )
        if not approvers:
            raise ValueError("somebody must be able to decide: give at least one approver")
        return approvers


def needs_approval(
    tool: Tool,
    config: ApprovalConfig,
    roles: Mapping[str, RoleConfig],
    held: Sequence[str],
) -> bool:
    """Whether a call of ``tool`` by a person holding ``held`` needs a person's approval."""
    if not may_need_approval(tool, config):
        return False
    return not exempt(tool.name, roles, held)


def may_need_approval(tool: Tool, config: ApprovalConfig) -> bool:
    """Whether a call of ``tool`` needs approval for somebody: when not, nobody's roles
    need reading to know it runs unasked."""
    return bool(approval_reasons(tool, config))


def approval_reasons(tool: Tool, config: ApprovalConfig) -> list[str]:
    """Why calls of ``tool`` need a person's approval before anyone's roles are looked at,
    in words for people (``slack-agent tools``): its own mark (``confirm=True``, or what its
    MCP server's setting and annotations say) and the globs of ``approval.tools`` that name
    it. Empty: it never needs approval."""
    reasons = [tool.confirm_reason or "confirm=True"] if tool.confirm else []
    if allows(config.tools, tool.name):
        globs = [g for g in config.tools if not g.startswith("!") and fnmatchcase(tool.name, g)]
        reasons.append("approval.tools: " + ", ".join(f'"{g}"' for g in globs))
    return reasons


def exempt(tool: str, roles: Mapping[str, RoleConfig], held: Sequence[str]) -> bool:
    """Whether the roles ``held`` let their holder run ``tool`` without approval (a
    ``!glob`` of any of them denies the exemption)."""
    globs = [glob for name in held if name in roles for glob in roles[name].approval_exempt]
    return allows(globs, tool)


def exempt_roles(tool: str, roles: Mapping[str, RoleConfig]) -> list[str]:
    """The roles that, held alone, let their holder run ``tool`` without approval."""
    return [name for name in roles if exempt(tool, roles, [name])]


def may_decide(
    config: ApprovalConfig, *, is_requester: bool, is_admin: bool, held: Sequence[str]
) -> bool:
    """Whether someone may approve or deny a request: as its requester, as an admin, or by
    a role ``approval.approvers`` names."""
    for approver in config.approvers:
        if approver == REQUESTER and is_requester:
            return True
        if approver == ADMINS and is_admin:
            return True
        if approver.startswith(ROLE) and approver[len(ROLE) :] in held:
            return True
    return False


@dataclass(frozen=True)
class Deciders:
    """Who may decide a request, as the config names them (grants made in Slack add
    people this cannot list): for the card's and the waiting note's words."""

    requester: bool  # the person whose turn it is
    admins: bool  # anyone holding an admin role
    roles: tuple[str, ...]  # roles named by ``role:NAME`` (not admin roles)
    members: tuple[str, ...]  # the Slack user and user-group IDs those roles list
    workspace_admins: bool  # one of those roles is held by Slack's workspace admins


def deciders(config: ApprovalConfig, roles: Mapping[str, RoleConfig]) -> Deciders:
    """Who ``approval.approvers`` lets decide, with the members the config names."""
    admins = ADMINS in config.approvers
    named = tuple(
        a[len(ROLE) :] for a in config.approvers if a.startswith(ROLE) and a[len(ROLE) :] in roles
    )
    chosen = [role for name, role in roles.items() if (admins and role.admin) or name in named]
    members = tuple(dict.fromkeys(m for role in chosen for m in role.members))
    return Deciders(
        requester=REQUESTER in config.approvers,
        admins=admins,
        roles=tuple(n for n in named if not roles[n].admin),
        members=members,
        workspace_admins=any(role.workspace_admins for role in chosen),
    )


def unknown_approver_roles(config: ApprovalConfig, roles: Mapping[str, RoleConfig]) -> list[str]:
    """``approval.approvers`` entries that name no configured role (start-up errors)."""
    return [
        f"approval.approvers: no role named {a[len(ROLE) :]!r}"
        for a in config.approvers
        if a.startswith(ROLE) and a[len(ROLE) :] not in roles
    ]
