"""A sign-in whose discovery or registration fails: an authorization server that refuses (its
metadata names another issuer, the registration is refused) is a ``GrantRefused``, one that
fails (5xx) a ``GrantUnavailable``, each with a fixed reason word; the attempt ends as soon as
the SDK's flow fails (not at its timeout); the logs get one plain warning line, never the
SDK's traceback or the server's text."""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx2
import pytest

from tests.fakes.oauth_server import WRONG_ISSUER, AuthServer, Switches
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.wiring import ALICE, People
from tools.mcp.oauth import personal
from tools.mcp.oauth.errors import SignInFailed
from tools.mcp.oauth.grants import GrantError, GrantRefused, GrantUnavailable
from tools.mcp.oauth.provider import SDK_FLOW_ERROR


def wrong_issuer(switches: Switches) -> None:
    switches.wrong_metadata_issuer = True


def registration_refused(switches: Switches) -> None:
    switches.register_status = 400


def registration_failing(switches: Switches) -> None:
    switches.register_status = 503


@pytest.fixture(autouse=True)
def no_timeout_to_end_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the failure itself can end an attempt (pytest's timeout fails a test that waits)."""
    monkeypatch.setattr(personal, "BEGIN_TIMEOUT_S", 3600.0)


def plain(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The records at WARNING and above, after checking that none carries a traceback or the
    server's own text, and that the SDK's flow error was not logged at all."""
    for record in caplog.records:
        text = record.getMessage()
        assert text != SDK_FLOW_ERROR
        assert "told to" not in text and WRONG_ISSUER not in text, text
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert all(r.exc_info is None and r.exc_text is None for r in loud), loud
    return loud


@pytest.mark.parametrize(
    ("switch", "kind", "reason"),
    [
        (wrong_issuer, GrantRefused, "issuer"),
        (registration_refused, GrantRefused, "registration"),
        (registration_failing, GrantUnavailable, "status_503"),
    ],
)
async def test_a_failed_discovery_or_registration_ends_the_attempt_with_its_kind(
    caplog: pytest.LogCaptureFixture,
    switch: Callable[[Switches], None],
    kind: type[GrantError],
    reason: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    switches = Switches()
    switch(switches)
    with AuthServer(switches) as auth_server, PersonalMcp(auth_server.url) as files:
        server = People().server(files.url)
        try:
            with pytest.raises(GrantError) as failed:
                await server.begin(ALICE)
        finally:
            await server.close()

    assert type(failed.value) is kind
    assert failed.value.reason == reason
    [line] = plain(caplog)
    assert line.getMessage() == (
        f"MCP server files: a person's sign-in could not be prepared "
        f"({'refused' if kind is GrantRefused else 'unavailable'}: {reason})"
    )


async def test_a_refusal_mid_call_tells_the_model_the_sign_in_failed(
    caplog: pytest.LogCaptureFixture, auth_server: AuthServer, files: PersonalMcp
) -> None:
    """A connected person's token is refused and their new sign-in cannot be prepared (the
    authorization server's metadata now names another issuer): the call says the sign-in
    failed, not that the server is unavailable."""
    people = People()
    server = people.server(files.url)
    try:
        await people.connect(server, ALICE, "alice")
        whoami = {tool.name: tool for tool in await server.tools_for(ALICE)}["files_whoami"]
        assert await whoami.invoke({}) == "alice"
        httpx2.post(f"{auth_server.url}/_test/revoke?user=alice")
        auth_server.switches.wrong_metadata_issuer = True

        with pytest.raises(SignInFailed) as failed:
            await whoami.invoke({})
    finally:
        await server.close()

    assert str(failed.value) == (
        "files_whoami did not run: the sign-in to files failed; the person can try again."
    )
    [line] = plain(caplog)
    assert line.getMessage().endswith("(refused: issuer)")


async def test_check_says_the_metadata_names_another_issuer(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    auth_server.switches.wrong_metadata_issuer = True
    server = People().server(files.url)
    try:
        survey = await server.survey()
    finally:
        await server.close()

    assert survey.pending is None
    assert survey.problem == (
        f"the authorization server metadata for {auth_server.url} names another issuer"
    )
