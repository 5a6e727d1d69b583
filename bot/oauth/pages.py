"""The small HTML pages a person's browser sees while signing in to an MCP server (pure).

Every value that comes from elsewhere (a server's name, a person's or a workspace's name)
is HTML-escaped; the state and the start nonce are only ever in the start page's hidden form
fields, escaped too.
No page carries a script, an image or a link to another site, so a page leaks nothing
through a ``Referer``; the headers that keep them out of caches and frames are set where
they are answered (``bot/oauth/web.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

START_PATH = "/oauth/start"

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;"
    "line-height:1.5;color:#1d1c1d}button{font-size:1rem;padding:.5rem 1.5rem;"
    "border-radius:4px;border:0;background:#007a5a;color:#fff;cursor:pointer}"
)


@dataclass(frozen=True)
class Page:
    """A page to answer with: its HTTP status and its HTML."""

    status: int
    html: str


def _page(status: int, title: str, *paragraphs: str, form: str = "") -> Page:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    html = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}{form}</body></html>"
    )
    return Page(status, html)


def start(server: str, person: str, workspace: str, state: str, nonce: str) -> Page:
    """What ``GET /oauth/start`` shows: whose Slack account gets the connection, and a
    Continue button that posts the state (the one step that spends the link) with the
    browser's start nonce (the twin of its start cookie: proof the POST came from here)."""
    form = (
        f'<form method=post action="{START_PATH}">'
        f'<input type=hidden name=state value="{escape(state)}">'
        f'<input type=hidden name=nonce value="{escape(nonce)}">'
        "<button type=submit>Continue</button></form>"
    )
    return _page(
        200,
        f"Connect {server}",
        f"Connect <strong>{escape(server)}</strong> for <strong>{escape(person)}</strong> "
        f"in <strong>{escape(workspace)}</strong>.",
        "Continue only if this is your own Slack account: whoever signs in next connects "
        "their account at the server to it.",
        form=form,
    )


def expired() -> Page:
    return _page(
        410,
        "This link expired",
        "This sign-in link expired or was used. Ask the bot again.",
    )


def opened_elsewhere() -> Page:
    return _page(
        409,
        "Already opened",
        "This link was already opened in another browser. Ask the bot again if that was not you.",
    )


def unknown() -> Page:
    return _page(
        400,
        "Unknown sign-in",
        "This sign-in is unknown or expired. Ask the bot again.",
    )


def other_browser() -> Page:
    return _page(
        403,
        "Another browser",
        "This sign-in was started in another browser. Finish it there, or ask the bot again.",
    )


def not_from_start_page() -> Page:
    return _page(
        403,
        "Open the link yourself",
        "This sign-in was not continued from its own page in this browser, so nothing was "
        "done. If you asked to connect, open the link you were sent again and press Continue.",
    )


def service_unavailable() -> Page:
    return _page(
        503,
        "Try again in a moment",
        "The bot cannot finish this step right now. Nothing was kept. Reload the page in a moment.",
    )


def finished() -> Page:
    return _page(409, "Already finished", "This sign-in is already finished.")


def declined(server: str) -> Page:
    return _page(
        200,
        "Not connected",
        f"You did not allow access to <strong>{escape(server)}</strong>. Nothing was kept.",
    )


def _try_again(server: str, command: str) -> str:
    return (
        "You can try again: ask the bot again, or use "
        f"<code>{escape(command)} connect {escape(server)}</code> in Slack."
    )


def failed(server: str, command: str) -> Page:
    """The authorization server refused the code, or its answer failed a check."""
    return _page(
        400,
        "Sign-in failed",
        f"The sign-in to <strong>{escape(server)}</strong> failed: its sign-in service did not "
        "give a connection the bot can trust. Nothing was kept.",
        _try_again(server, command),
    )


def unavailable(server: str, command: str) -> Page:
    """The authorization server could not be reached to finish the sign-in."""
    return _page(
        502,
        "Try again later",
        f"The sign-in service of <strong>{escape(server)}</strong> could not be reached to "
        "finish the sign-in. Nothing was kept.",
        _try_again(server, command) + " Wait a few minutes first.",
    )


def connected(server: str, *, late: bool = False) -> Page:
    paragraphs = [f"Connected to <strong>{escape(server)}</strong>. You can close this tab."]
    if late:
        paragraphs.append(
            "The request that asked for it had already expired: ask the bot again, and it "
            "will use this connection."
        )
    return _page(200, "Connected", *paragraphs)
