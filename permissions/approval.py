"""Which calls need a person's approval, and who may give it (pure).

A call needs approval when its tool says so (``confirm``: a Python tool marked
``confirm=True``, or an MCP tool whose server's ``approval`` setting and annotations say it
may change things), or when it matches a glob of ``approval.tools``; unless one of the
roles its person holds exempts it (``roles.NAME.approval_exempt``). Nothing the model or a
tool says can lift it: only the config, which an admin writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from permissions.config import RoleConfig
from permissions.patterns import allows

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
    tool: str,
    marked: bool,
    config: ApprovalConfig,
    roles: Mapping[str, RoleConfig],
    held: Sequence[str],
) -> bool:
    """Whether a call of ``tool`` (``marked``: the tool itself asks for approval) by a person
    holding ``held`` needs a person's approval."""
    if not may_need_approval(tool, marked, config):
        return False
    exempt = [glob for name in held if name in roles for glob in roles[name].approval_exempt]
    return not allows(exempt, tool)


def may_need_approval(tool: str, marked: bool, config: ApprovalConfig) -> bool:
    """Whether a call of ``tool`` needs approval for somebody: when not, nobody's roles
    need reading to know it runs unasked."""
    return marked or allows(config.tools, tool)


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


def unknown_approver_roles(config: ApprovalConfig, roles: Mapping[str, RoleConfig]) -> list[str]:
    """``approval.approvers`` entries that name no configured role (start-up errors)."""
    return [
        f"approval.approvers: no role named {a[len(ROLE) :]!r}"
        for a in config.approvers
        if a.startswith(ROLE) and a[len(ROLE) :] not in roles
    ]
