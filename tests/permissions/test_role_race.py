"""Grants and revokes cannot be undone by a race, end to end: a role lookup that read the
grants before `/agent grant` or `/agent revoke` never writes its answer back after it, so the
change is seen at the next lookup, not when the cached answer expires (300 s).

The interleaving is forced: the lookup's read of the grants is held, once it has read, until
the command has run to completion."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from permissions.lookups import GrantLike, Grants
from tests.fakes.llm_server import text
from tests.fakes.slack_harness import SlackHarness, mention
from tests.fakes.slack_server import TEAM
from tests.permissions.test_roles_in_slack import CONFIG


class HeldGrants:
    """The app's grants, with the first read for ``user`` held after it has read."""

    def __init__(self, inner: Grants, user: str) -> None:
        self.inner = inner
        self.user = user
        self.read = asyncio.Event()  # the held lookup has the grants in hand
        self.release = asyncio.Event()

    async def of(self, team: str, user: str) -> Sequence[GrantLike]:
        found = await self.inner.of(team, user)
        if user == self.user and not self.release.is_set():
            self.read.set()
            await self.release.wait()
        return found


@pytest.fixture
async def app(slack_app: SlackHarness) -> SlackHarness:
    slack_app.slack.users = {u: {"id": u} for u in ("U0ADMIN", "U0ALICE")}
    slack_app.slack.groups = {"S0OPS": [], "S0WAREHOUSE": []}
    return await slack_app.start(**CONFIG)


async def whoami(app: SlackHarness, user: str) -> str:
    return str((await app.command("whoami", user=user))["text"])


@pytest.mark.parametrize("change", ["revoke", "grant"])
async def test_a_lookup_under_way_never_undoes_a_change(app: SlackHarness, change: str) -> None:
    if change == "revoke":  # (the grant leaves nothing of Alice's cached)
        await app.command("grant <@U0ALICE> warehouse_staff", user="U0ADMIN")
    resolver = app.services.policy.resolver if app.services else None
    assert resolver is not None and resolver.grants is not None
    held = HeldGrants(resolver.grants, "U0ALICE")
    resolver.grants = held
    await app.command("whoami", user="U0ADMIN")  # the admin's own roles: not held

    # A turn of Alice's starts, and its role lookup reads the grants as they were...
    app.llm.add(text("ok"))
    await app.post(app.envelope(mention("hello", "900.000001", user="U0ALICE")))
    async with asyncio.timeout(15):
        await held.read.wait()
    # ...while an admin's command runs to completion...
    reply = await app.command(f"{change} <@U0ALICE> warehouse_staff", user="U0ADMIN")
    assert "warehouse_staff" in reply["text"] and "no grant" not in reply["text"]
    # ...and only then does the lookup go on, and try to cache what it read.
    held.release.set()
    await app.answered("C0CHAN", "900.000001")

    after = await whoami(app, "U0ALICE")  # the next lookup: the change holds
    if change == "revoke":
        assert "• *member* — default role" in after and "warehouse_staff" not in after
    else:
        assert "• *warehouse_staff* — granted by <@U0ADMIN>" in after
    cached = await app.state.shared.roles.read(TEAM, "U0ALICE", False)
    assert cached.value is not None and ("warehouse_staff" in cached.value) is (change == "grant")
