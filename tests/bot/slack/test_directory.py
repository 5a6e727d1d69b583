"""Who a person is, as the bot's workspace sees them: users.info's user against auth.test's
team (and Enterprise Grid organisation). Pure."""

from __future__ import annotations

from bot.slack.directory import standing_of
from permissions.lookups import Standing

HERE, ORG = "T0TEAM", "E0ORG"


def test_a_person_of_this_workspace() -> None:
    assert standing_of({"team_id": HERE}, HERE, "") == Standing(member=True, admin=False)
    for flag in ("is_admin", "is_owner", "is_primary_owner"):
        assert standing_of({"team_id": HERE, flag: True}, HERE, "") == Standing(True, True)


def test_a_person_of_another_workspace_or_of_none_is_outside() -> None:
    owner_elsewhere = {"team_id": "T0OTHER", "is_owner": True, "is_admin": True}
    assert standing_of(owner_elsewhere, HERE, "") == Standing(member=False, admin=False)
    assert standing_of({"is_admin": True}, HERE, "") == Standing(False, False)  # no team_id
    assert standing_of({"team_id": HERE, "is_admin": True}, "", "") == Standing(False, False)


def test_enterprise_grid_counts_the_organisation() -> None:
    sibling = {"team_id": "T0SIBLING", "enterprise_user": {"enterprise_id": ORG}}
    assert standing_of(sibling, HERE, ORG) == Standing(member=True, admin=False)
    # An admin of a sibling workspace is no admin here; an admin of the organisation is.
    assert standing_of({**sibling, "is_admin": True}, HERE, ORG) == Standing(True, False)
    org_admin = {
        "team_id": "T0SIBLING",
        "enterprise_user": {"enterprise_id": ORG, "is_admin": True},
    }
    assert standing_of(org_admin, HERE, ORG) == Standing(True, True)
    assert standing_of({"team_id": "T0SIBLING", "enterprise_id": ORG}, HERE, ORG).member
    # Another organisation, or a bot that is not on Grid: outside.
    other_org = {"team_id": "T0X", "enterprise_user": {"enterprise_id": "E0ELSE", "is_owner": True}}
    assert standing_of(other_org, HERE, ORG) == Standing(False, False)
    assert standing_of(sibling, HERE, "") == Standing(False, False)
    assert standing_of({"team_id": "T0X", "enterprise_user": {}}, HERE, ORG) == Standing(
        False, False
    )
