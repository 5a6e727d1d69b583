"""A person's sign-in to an MCP server a call needs, as Slack shows it (pure Block Kit).

- The card in a channel, for everyone: "⏸ Waiting for @U to connect *server* to continue
  (15 minutes). @U: use the button I sent you, or `/agent connect server`", with only a
  "Not now" button (``oauth_not_now``, its value the request's id). The start link is never
  on it: everyone reads a channel.
- The card where only the person reads it (a DM, the agent pane): the same words pointing at
  its own link button "Connect server" (``oauth_connect``, the start link as its url), and
  "Not now".
- The ephemeral message to the person in a channel: the link button and one line; and
  ``/agent connect``'s reply, its words and the same button.
- Once decided, the card says so: "✓ @U connected server", "@U chose not to connect server",
  "Sign-in to server failed" (at its callback: refused, or the authorization server out of
  reach), "Sign-in to server expired", without buttons.

The words around the server's name and the person are rich text elements, so a server's
name is never formatting, a mention or a link, and its invisible characters are written
out (``visible``); the notification text has them escaped (``escaped``). The start link is
given by the caller (unsealed in the worker) and goes only where the person alone reads it.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    PlainTextObject,
    RichTextBlock,
    RichTextElementParts,
    RichTextSectionElement,
)

from bot.slack.blocks.escape import escaped, visible
from bot.slack.blocks.limits import shorten
from bot.turn.approval import duration
from bot.turn.store.approvals import (
    SIGNIN_FAILED,
    SIGNIN_UNAVAILABLE,
    ApprovalRequest,
    ApprovalState,
)

CONNECT_ACTION = "oauth_connect"  # the link button: opens the start link; acked, nothing else
NOT_NOW_ACTION = "oauth_not_now"  # the person declines; its value is the request's id
BUTTON_CHARS = 75  # a button's text

_Text = RichTextElementParts.Text
_BOLD = RichTextElementParts.TextStyle(bold=True)
_CODE = RichTextElementParts.TextStyle(code=True)


def card_text(request: ApprovalRequest) -> str:
    """The card's notification text (escaped: the server's name cannot mention or link)."""
    server, user = _named(request.server), f"<@{escaped(request.user)}>"
    if request.state is ApprovalState.APPROVED:
        return f"✓ {user} connected {server}"
    if _failed(request):
        return f"Sign-in to {server} failed"
    if request.state is ApprovalState.DENIED:
        return f"{user} chose not to connect {server}"
    if request.state is ApprovalState.EXPIRED:
        return f"Sign-in to {server} expired"
    return f"⏸ Waiting for {user} to connect {server} to continue"


def card_blocks(request: ApprovalRequest, command: str, link: str = "") -> list[dict[str, Any]]:
    """The card for a sign-in request, as it is now. ``link``: the start link, given only
    where the person alone reads the card (a DM, the agent pane): then the card carries the
    "Connect" button; in a channel ("") it points at the button sent to the person.
    ``command``: the slash command (``slack.command``)."""
    if not request.open:
        return [_dict(RichTextBlock(elements=[_decided(request)]))]
    user, server = _user(request.user), _server(request.server)
    pointer = "the button below" if link else "the button I sent you"
    sentence = RichTextSectionElement(
        elements=[
            _Text(text="⏸ Waiting for "),
            user,
            _Text(text=" to connect "),
            server,
            _Text(text=f" to continue ({duration(request.timeout_s)}). "),
            user,
            _Text(text=f": use {pointer}, or "),
            _Text(text=f"{command} connect {visible(request.server)}", style=_CODE),
        ]
    )
    buttons = [_not_now(request)]
    if link:
        buttons.insert(0, _connect(request.server, link))
    return [_dict(RichTextBlock(elements=[sentence])), _dict(ActionsBlock(elements=buttons))]


def ephemeral_text(server: str) -> str:
    """The ephemeral message's notification text (escaped)."""
    return f"Connect {_named(server)} to continue: the button is yours alone."


def ephemeral_blocks(server: str, link: str) -> list[dict[str, Any]]:
    """The message only the person sees in a channel: one line and the link button."""
    line = RichTextSectionElement(
        elements=[
            _Text(text="I need you to connect "),
            _server(server),
            _Text(text=" to continue. This button is yours alone; it opens once."),
        ]
    )
    return [
        _dict(RichTextBlock(elements=[line])),
        _dict(ActionsBlock(elements=[_connect(server, link)])),
    ]


def connect_blocks(server: str, link: str, within: str) -> list[dict[str, Any]]:
    """``/agent connect``'s reply, which only the person sees: one line and the link button
    (``within``: how long the link opens, in words)."""
    line = RichTextSectionElement(
        elements=[
            _Text(text="Connect "),
            _server(server),
            _Text(text=f" with this button: it is yours alone, and opens once within {within}."),
        ]
    )
    return [
        _dict(RichTextBlock(elements=[line])),
        _dict(ActionsBlock(elements=[_connect(server, link)])),
    ]


def _decided(request: ApprovalRequest) -> RichTextSectionElement:
    server = _server(request.server)
    if request.state is ApprovalState.APPROVED:
        parts: list[Any] = [_Text(text="✓ "), _user(request.by or request.user)]
        parts += [_Text(text=" connected "), server]
    elif _failed(request):
        parts = [_Text(text="Sign-in to "), server, _Text(text=" failed")]
    elif request.state is ApprovalState.DENIED:
        parts = [_user(request.by or request.user), _Text(text=" chose not to connect "), server]
    else:
        parts = [_Text(text="Sign-in to "), server, _Text(text=" expired")]
    return RichTextSectionElement(elements=parts)


def _failed(request: ApprovalRequest) -> bool:
    """Denied at its callback because the sign-in failed, not by the person."""
    return request.state is ApprovalState.DENIED and request.reason in (
        SIGNIN_FAILED,
        SIGNIN_UNAVAILABLE,
    )


def _connect(server: str, link: str) -> ButtonElement:
    return ButtonElement(
        text=PlainTextObject(text=shorten(f"Connect {visible(server)}", BUTTON_CHARS)),
        action_id=CONNECT_ACTION,
        url=link,
        style="primary",
    )


def _not_now(request: ApprovalRequest) -> ButtonElement:
    return ButtonElement(
        text=PlainTextObject(text="Not now"), action_id=NOT_NOW_ACTION, value=request.id
    )


def _user(user: str) -> RichTextElementParts.User:
    return RichTextElementParts.User(user_id=user)


def _server(server: str) -> RichTextElementParts.Text:
    return _Text(text=visible(server), style=_BOLD)


def _named(server: str) -> str:
    return escaped(visible(server))


def _dict(block: Block) -> dict[str, Any]:
    return block.to_dict()
