"""Who may decide an approval request, in words with mentions (pure): the card and the
waiting note say the same."""

from __future__ import annotations

from permissions.approval import Deciders


def who_decides(deciders: Deciders, requester: str) -> str:
    """``<@U1>, <!subteam^S1> or an admin``: everyone the config lets decide, the requester
    first when they may, each person or user group mentioned."""
    names = [f"<@{requester}>"] if deciders.requester and requester else []
    for member in deciders.members:
        mention = f"<!subteam^{member}>" if member.startswith("S") else f"<@{member}>"
        if mention not in names:
            names.append(mention)
    if deciders.workspace_admins:
        names.append("a workspace admin")
    if deciders.admins:
        names.append("an admin")
    names += [f"anyone with the role {role}" for role in deciders.roles]
    if not names:
        return "nobody"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
