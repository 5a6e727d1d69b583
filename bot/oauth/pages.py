"""The small HTML pages a person's browser sees while signing in to an MCP server (pure).

Every value that comes from elsewhere (a server's name, a person's or a workspace's name)
is HTML-escaped; the state is only ever in the start page's hidden form field, escaped too.
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


def start(server: str, person: str, workspace: str, state: str) -> Page:
    """What ``GET /oauth/start`` shows: whose Slack account gets the connection, and a
    Continue button that posts the state (the one step that spends the link)."""
    form = (
        f'<form method=post action="{START_PATH}">'
        f'<input type=hidden name=state value="{escape(state)}">'
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


def finished() -> Page:
    return _page(409, "Already finished", "This sign-in is already finished.")


def declined(server: str) -> Page:
    return _page(
        200,
        "Not connected",
        f"You did not allow access to <strong>{escape(server)}</strong>. Nothing was kept.",
    )


def failed(server: str) -> Page:
    return _page(
        400,
        "Sign-in failed",
        f"The sign-in to <strong>{escape(server)}</strong> failed. Nothing was kept. Ask the "
        "bot again to try once more.",
    )


def unavailable(server: str) -> Page:
    return _page(
        502,
        "Try again later",
        f"The sign-in service of <strong>{escape(server)}</strong> is unavailable right now. "
        "Nothing was kept. Ask the bot again in a few minutes.",
    )


def connected(server: str, *, late: bool = False) -> Page:
    paragraphs = [f"Connected to <strong>{escape(server)}</strong>. You can close this tab."]
    if late:
        paragraphs.append(
            "The request that asked for it had already expired: ask the bot again, and it "
            "will use this connection."
        )
    return _page(200, "Connected", *paragraphs)
