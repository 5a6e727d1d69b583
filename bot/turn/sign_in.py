"""A Slack turn's sign-in gate (the ``Connector`` of tools/mcp/oauth/gate.py): a call to a
tool of an MCP server that signs each person in runs only once its person is connected;
until then the turn parks on a sign-in request, as it does for an approval.

``ready(tool, server)``, before the call (and before anyone is asked to approve it):

1. A person from another workspace (``Person.external``) may not connect unless
   ``oauth.allow_external``: the model is told, nothing is opened, the audit says
   ``signin_declined``/``outsider``.
2. Their token for the server is fresh (``Held``): the call goes ahead. The token cannot be
   read now (``Unavailable``): ``SignInUnavailable``, and the connection is kept.
3. Otherwise this call's newest sign-in request (``Approvals.sign_ins_of``) decides:
   none yet, or one the person finished whose token is gone again (fewer than
   :data:`MAX_SIGN_INS`): the server's authorization request is built (``begin``; None: the
   server answered without a token, and the call goes ahead), a sign-in request is opened,
   the flow is stored (``SignIns.begin``), its start link sealed into the request, the audit
   says ``signin_requested``, and the turn parks (``CallDeferred``). Still open: it parks
   again. Expired, declined: the model is told (``NotConnected``). Denied because the
   sign-in failed at the callback (the request's reason ``SIGNIN_FAILED``: the authorization
   server refused the code or its answer failed a check) or could not be finished
   (``SIGNIN_UNAVAILABLE``: it could not be reached): ``SignInFailed`` or ``SignInUnavailable``,
   at once (the callback decides the request then). The cap reached: "keeps failing".

``sign_in(tool, server, needed)``: the server refused the running call at the HTTP level
(401, or 403 for more scope): as step 3, with the authorization request the refusal carried
(the approval's run was given back by the approval wrapper already).

A crash between the steps of 3 leaves at most an unused flow (it expires) or an open request
without its link: the next look starts a flow for it. What the model reads is
tools/mcp/oauth/errors.py's fixed sentences, never the OAuth layer's own words.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import NoReturn, Protocol

from bot.state.audit import AuditEntry, AuditKind, AuditLog
from bot.turn.approval import duration, facts
from bot.turn.model import QueuedTurn
from bot.turn.store.approvals import (
    SIGN_IN,
    SIGNIN_FAILED,
    SIGNIN_UNAVAILABLE,
    ApprovalRequest,
    Approvals,
    ApprovalState,
    audited,
    sign_in_field,
)
from permissions.policy import Person
from tools.call_context import current_call
from tools.definition import Tool
from tools.errors import CallDeferred
from tools.mcp.oauth.account import Account
from tools.mcp.oauth.errors import NotConnected, SignInFailed, SignInUnavailable
from tools.mcp.oauth.grants import GrantRefused, GrantUnavailable
from tools.mcp.oauth.pending import PendingAuthorization, SignInRequired
from tools.mcp.oauth.tokens import Held, PersonTokens, Unavailable

log = logging.getLogger(__name__)

MAX_SIGN_INS = 3  # sign-in requests one call may open: past it, "keeps failing" (no loop)
CONNECT = "waiting for {person} to connect {server}"
MORE_ACCESS = "{server} needs more access: waiting for {person} to connect it again"
NOBODY = (
    "{tool} did not run: {person} is not connected to {server}, and nobody can be asked to "
    "connect here."
)
GONE = (
    "{tool} did not run: the sign-in to {server} it waited for is no longer kept. Ask for it "
    "again if it is still wanted."
)


class PersonalBegin(Protocol):
    """What the gate asks of a server that signs each person in (``PersonalServer``,
    tools/mcp/oauth/personal.py)."""

    async def begin(
        self, account: Account, *, redirect_uri: str | None = None
    ) -> PendingAuthorization | None: ...


class Flows(Protocol):
    """Where a sign-in's flow is stored until the browser comes back (``SignIns``,
    bot/oauth/flows.py)."""

    async def begin(
        self,
        account: Account,
        server: str,
        pending: PendingAuthorization,
        *,
        request_id: str | None,
        external: bool,
        ttl_s: float,
        base_url: str | None = None,
    ) -> str: ...


class SignInSide(Protocol):
    """What the gate needs of the process's OAuth side (``OAuthSide``, bot/oauth/side.py):
    each person's tokens, the flows, and the start link sealed for its request."""

    @property
    def sign_ins(self) -> Flows: ...

    def tokens_for(self, account: Account, server: str) -> PersonTokens: ...

    def seal_link(self, account: Account, server: str, url: str) -> str: ...


class TurnSignIn:
    """The sign-in gate of one Slack turn (built beside its ``TurnApprover``)."""

    def __init__(
        self,
        approvals: Approvals,
        audit: AuditLog,
        queued: QueuedTurn,
        side: SignInSide,
        personal: Mapping[str, PersonalBegin],
        person: Person,
        *,
        timeout_s: float,
        allow_external: bool = False,
    ) -> None:
        self.approvals = approvals
        self.audit = audit
        self.queued = queued
        self.side = side
        self.personal = personal
        self.person = person
        self.account = Account(queued.turn.team, queued.turn.user)
        self.timeout_s = timeout_s
        self.allow_external = allow_external

    @property
    def _who(self) -> str:
        return f"<@{self.account.user}>"

    async def ready(self, tool: Tool, server: str) -> None:
        """Returns when the person may call ``server`` now; else raises ``CallDeferred`` (the
        turn parks until they connect) or what the model reads."""
        await self._refuse_outsider(tool, server)
        found = await self.side.tokens_for(self.account, server).fresh()
        if isinstance(found, Held):
            return
        if isinstance(found, Unavailable):
            raise SignInUnavailable(tool.name, server)
        await self._ask(tool, server, None)

    async def sign_in(self, tool: Tool, server: str, needed: SignInRequired) -> NoReturn:
        """The server refused the call before it started: ask the person to connect again
        (or for more access), with the request the refusal carried."""
        await self._refuse_outsider(tool, server)
        await self._ask(tool, server, needed.pending)
        raise AssertionError("asking with the refusal's request parks or refuses")

    async def _refuse_outsider(self, tool: Tool, server: str) -> None:
        if not self.person.external or self.allow_external:
            return
        await self.audit.add(
            AuditEntry(
                kind=AuditKind.CONNECTION,
                actor=self.account.user,
                action="signin_declined",
                target=server,
                outcome="outsider",
                detail=self._detail(tool, server),
            )
        )
        raise NotConnected.outsider(tool.name, server)

    async def _ask(self, tool: Tool, server: str, pending: PendingAuthorization | None) -> None:
        """Park on this call's sign-in, or say why the call cannot run; returns only when
        the server needs no sign-in after all (the call goes ahead)."""
        call = current_call()
        if call is None:  # not inside the loop: nobody to send a link to for this call
            raise NotConnected(
                tool.name, server, NOBODY.format(tool=tool.name, person=self._who, server=server)
            )
        asked = await self.approvals.sign_ins_of(self.queued.entry_id, call.call_id)
        newest = asked.newest
        if asked.gone:
            raise NotConnected(tool.name, server, GONE.format(tool=tool.name, server=server))
        if newest is not None and newest.open and await self.approvals.expire_due([newest]):
            await self.audit.add(audited(newest, "signin_expired", "expired"))
            newest = await self.approvals.get(newest.id) or newest
        if newest is not None and newest.open:
            if not newest.link:  # opened, and its flow never stored (a crash between)
                pending = pending or await self._begin(tool, server)
                if pending is None:  # the server takes the call without a token now
                    return
                await self._start(server, newest, pending)
            raise CallDeferred(tool.name, self._waiting(server, pending))
        if newest is not None and newest.state is ApprovalState.EXPIRED:
            within = duration(newest.timeout_s or self.timeout_s)
            raise NotConnected.expired(tool.name, self._who, server, within)
        if newest is not None and newest.state is ApprovalState.DENIED:
            if newest.reason == SIGNIN_FAILED:
                raise SignInFailed(tool.name, self._who, server)
            if newest.reason == SIGNIN_UNAVAILABLE:
                raise SignInUnavailable(tool.name, server)
            raise NotConnected.declined(tool.name, self._who, server)
        # None yet, or the person connected and the server wants a sign-in again.
        if asked.count >= MAX_SIGN_INS:
            raise NotConnected.keeps_failing(tool.name, server)
        if pending is None:
            pending = await self._begin(tool, server)
            if pending is None:
                return
        request, opened = await self.approvals.open(
            self.queued,
            call.call_id,
            tool.name,
            "",
            self.timeout_s,
            facts(tool),
            kind=SIGN_IN,
            server=server,
            field=sign_in_field(call.call_id, asked.count + 1),
        )
        if opened or not request.link:
            await self._start(server, request, pending)
        raise CallDeferred(tool.name, self._waiting(server, pending))

    async def _begin(self, tool: Tool, server: str) -> PendingAuthorization | None:
        """The person's authorization request, built by the server's SDK client (None: the
        server answered without asking for a token)."""
        personal = self.personal.get(server)
        if personal is None:  # not a server that signs people in: nothing to ask
            return None
        try:
            return await personal.begin(self.account)
        except GrantUnavailable:
            raise SignInUnavailable(tool.name, server) from None
        except GrantRefused:
            raise SignInFailed(tool.name, self._who, server) from None

    async def _start(
        self, server: str, request: ApprovalRequest, pending: PendingAuthorization
    ) -> None:
        """Store the sign-in's flow (it lives as long as the request waits) and seal its
        start link into ``request``."""
        url = await self.side.sign_ins.begin(
            self.account,
            server,
            pending,
            request_id=request.id,
            external=self.person.external,
            ttl_s=max(request.deadline - time.time(), 1.0),
        )
        await self.approvals.set_link(request.id, self.side.seal_link(self.account, server, url))
        await self.audit.add(
            audited(request, "signin_requested", "pending", step_up="1" if pending.step_up else "")
        )
        log.info(
            "turn %s waits for its person to connect %s (call %s)",
            self.queued.entry_id,
            server,
            request.call_id,
        )

    def _waiting(self, server: str, pending: PendingAuthorization | None) -> str:
        step_up = pending is not None and pending.step_up
        return (MORE_ACCESS if step_up else CONNECT).format(person=self._who, server=server)

    def _detail(self, tool: Tool, server: str) -> dict[str, str]:
        call = current_call()
        turn = self.queued.turn
        return {
            "tool": tool.name,
            "call": call.call_id if call is not None else "",
            "turn": self.queued.entry_id,
            "server": server,
            "channel": turn.channel,
            "thread": turn.thread_ts,
        }
