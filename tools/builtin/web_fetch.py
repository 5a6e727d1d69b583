"""fetch_url: read a web page's text from hosts an admin allowed, within size and time limits."""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp

from tools.config import FetchUrlConfig
from tools.definition import Tool, python_tool
from tools.errors import ToolError

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")
_SKIP_TAGS = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCK_TAGS = {
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "hr",
    "dt",
    "dd",
}


def host_allowed(url: str, patterns: list[str]) -> bool:
    return _matching_pattern(url, patterns) is not None


def _matching_pattern(url: str, patterns: list[str]) -> str | None:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host:
        return None
    with_port = f"{host}:{parts.port}" if parts.port else host
    for pattern in patterns:
        pattern = pattern.lower().strip()
        target = with_port if ":" in pattern else host
        if fnmatch.fnmatchcase(target, pattern):
            return pattern
    return None


async def check_address(url: str, pattern: str) -> None:
    """Refuse internal addresses a glob let through (SSRF).

    Link-local addresses (cloud metadata services live there) are always refused. Loopback
    and private addresses are refused unless the allow-list names the host exactly, without
    wildcards, so ``*.example.com`` cannot be turned against the bot's own network.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, parts.port or 443)
        except OSError:
            raise ToolError(f"Could not resolve {host}.") from None
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    exact = not any(ch in pattern for ch in "*?[")
    for address in addresses:
        if address.is_link_local or address.is_multicast or address.is_unspecified:
            raise ToolError(f"{host} points to a link-local or reserved address; refused.")
        if (address.is_private or address.is_loopback or address.is_reserved) and not exact:
            raise ToolError(
                f"{host} points to an internal address ({address}); only hosts named exactly "
                "in the allow-list may be internal."
            )


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
            self._pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
            self._pre -= tag == "pre" and self._pre > 0

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            # Line breaks in HTML source are spaces, except inside <pre>.
            self.parts.append(data if self._pre else " ".join(data.split("\n")))


def html_to_text(html: str) -> tuple[str, str]:
    """Return (title, readable text) of an HTML document."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    text = "\n".join(line for line in lines if line)
    return " ".join(parser.title.split()), text


async def fetch_text(url: str, config: FetchUrlConfig) -> dict[str, Any]:
    if urlsplit(url).scheme not in ("http", "https"):
        raise ToolError("Only http and https URLs can be fetched.")
    timeout = aiohttp.ClientTimeout(total=config.timeout_s)
    try:
        async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
            return await asyncio.wait_for(_fetch(session, url, config), config.timeout_s)
    except TimeoutError:
        raise ToolError(f"Fetching {url} took longer than {config.timeout_s:g} s.") from None
    except aiohttp.ClientError as exc:
        raise ToolError(f"Could not fetch {url}: {type(exc).__name__}.") from None


async def _fetch(
    session: aiohttp.ClientSession, url: str, config: FetchUrlConfig
) -> dict[str, Any]:
    current = url
    for _ in range(config.max_redirects + 1):
        pattern = _matching_pattern(current, config.allowed_hosts)
        if pattern is None:
            raise ToolError(
                f"The host of {current} is not on the allow-list. "
                f"Allowed: {', '.join(config.allowed_hosts)}."
            )
        await check_address(current, pattern)
        async with session.get(current, allow_redirects=False) as response:
            if response.status in (301, 302, 303, 307, 308) and "Location" in response.headers:
                current = urljoin(current, response.headers["Location"])
                continue
            if response.status >= 400:
                raise ToolError(f"{current} answered HTTP {response.status}.")
            content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type and not content_type.startswith(_TEXT_TYPES):
                raise ToolError(f"{current} is {content_type}, not text.")
            body = await response.content.read(config.max_bytes + 1)
            truncated = len(body) > config.max_bytes
            raw = body[: config.max_bytes].decode(response.charset or "utf-8", errors="replace")
            title, text = ("", raw)
            if content_type in ("text/html", "application/xhtml+xml") or (
                not content_type and "<html" in raw[:1000].lower()
            ):
                title, text = html_to_text(raw)
            return {
                "url": current,
                "status": response.status,
                "content_type": content_type or "unknown",
                "title": title,
                "text": text,
                "truncated": truncated,
            }
    raise ToolError(f"Too many redirects (more than {config.max_redirects}).")


def make_fetch_url(config: FetchUrlConfig) -> Tool:
    hosts = ", ".join(config.allowed_hosts)

    async def fetch_url(url: str) -> dict[str, Any]:
        """Fetch a web page and return its readable text.

        Args:
            url: The full http or https URL to fetch.
        """
        return await fetch_text(url, config)

    return python_tool(
        fetch_url,
        description=(
            "Fetch a web page (http or https) and return its title and readable text. "
            f"Only these hosts may be fetched: {hosts}. "
            f"At most {config.max_bytes} bytes are read."
        ),
        timeout=config.timeout_s + 1,
    )
