"""The provider's tokens come from ``PersonTokens``: loaded before each request, one newer
token asked for after a 401, the SDK's sign-in when there is none (plan §3.3)."""

from __future__ import annotations

from mcp.client.client import Client

from tests.fakes.oauth_server import AuthServer
from tests.fakes.personal_mcp import PersonalMcp
from tests.tools.mcp.oauth.people import Person, follow, sign_in, whoami
from tools.mcp.oauth.grants import complete_authorization
from tools.mcp.oauth.memory import MemoryTokens
from tools.mcp.oauth.pending import PendingAuthorization
from tools.mcp.oauth.tokens import Freshness, Gone, Held, TokenSnapshot, Unavailable


class Replica:
    """Tokens another process refreshed: the first token held is stale (the server refuses
    it); asked after a 401 of that version, the store has the new one (or ``then``)."""

    def __init__(self, stale: TokenSnapshot, then: Freshness) -> None:
        self.ver = 1
        self.current: Freshness = Held(1, stale)
        self.then = then
        self.asked: list[int | None] = []

    async def fresh(self, *, after_401_of: int | None = None) -> Freshness:
        self.asked.append(after_401_of)
        if after_401_of == self.ver:
            self.ver += 1
            self.current = self.then
        return self.current


def stale(snapshot: TokenSnapshot) -> TokenSnapshot:
    token = snapshot.token.model_copy(update={"access_token": "at-refused-by-the-server"})
    return snapshot.model_copy(update={"token": token})


async def test_a_401_gets_one_newer_token_and_one_resend(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    good = await sign_in(Person(files.url, MemoryTokens()))
    tokens = Replica(stale(good), Held(2, good))
    person = Person(files.url, tokens)

    assert await person.attempt(whoami) == "alice"

    assert [ver for ver in tokens.asked if ver is not None] == [1]
    first, again = person.sent[:2]
    assert (first.method, first.url) == (again.method, again.url) == ("POST", files.url)
    assert first.authorization == "Bearer at-refused-by-the-server"
    assert again.authorization == f"Bearer {good.token.access_token}"
    # No discovery and no sign-in: only the MCP endpoint was asked.
    assert {sent.url for sent in person.sent} == {files.url}
    assert not person.pending.done()
    assert auth_server.authority.counts["logins"] == 1  # the sign-in that made ``good``
    # The expiry is loaded with the token (the SDK would take a stored one as never expiring).
    assert person.provider.context.token_expiry_time == good.expires_at


async def test_a_401_without_a_newer_token_signs_in(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    good = await sign_in(Person(files.url, MemoryTokens()))
    tokens = Replica(stale(good), Gone())
    person = Person(files.url, tokens)

    found = await person.attempt(whoami)

    assert isinstance(found, PendingAuthorization) and found.step_up is False
    assert [ver for ver in tokens.asked if ver is not None] == [1]
    assert person.provider.context.current_tokens is None
    assert any("/.well-known/oauth-protected-resource" in sent.url for sent in person.sent)


async def test_gone_signs_in(auth_server: AuthServer, files: PersonalMcp) -> None:
    tokens = MemoryTokens(await sign_in(Person(files.url, MemoryTokens())))
    tokens.forget()  # disconnected, or its refresh refused, elsewhere
    person = Person(files.url, tokens)

    found = await person.attempt(whoami)

    assert isinstance(found, PendingAuthorization)
    assert person.sent[0].url == files.url and person.sent[0].authorization is None


async def test_unavailable_tokens_send_nothing(files: PersonalMcp) -> None:
    class Away:
        async def fresh(self, *, after_401_of: int | None = None) -> Freshness:
            return Unavailable("redis")

    person = Person(files.url, Away())

    assert await person.attempt(whoami) == Unavailable("redis")
    assert person.sent == []
    assert not person.pending.done()


async def test_step_up_asks_for_the_union_and_then_runs(
    auth_server: AuthServer, files: PersonalMcp
) -> None:
    async def write(client: Client) -> str:
        result = await client.call_tool("write_note", {"text": "hello"})
        assert not result.is_error, result
        return str(result.structured_content["result"] if result.structured_content else "")

    tokens = MemoryTokens(await sign_in(Person(files.url, MemoryTokens())))

    found = await Person(files.url, tokens).attempt(write)

    assert isinstance(found, PendingAuthorization) and found.step_up is True
    assert found.scope == "files:read offline_access files:write"
    assert tokens.refreshes == 0  # a 403 is not a reason to refresh
    code, iss = await follow(found)
    tokens.keep(await complete_authorization(found, code, iss))
    assert await Person(files.url, tokens).attempt(write) == "noted for alice: hello"
