"""fetch_url: read a web page's text from hosts an admin allowed, within size and time limits."""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import socket
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver

from tools.builtin.checked_resolver import AddressRefused, CheckedResolver, refusal
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


def check_literal_address(url: str, exact: bool) -> None:
    """Refuse an IP address written in the URL that the address rule refuses (SSRF). aiohttp
    connects to such a host without a DNS lookup, so this is its only check. Host names are
    checked by :class:`CheckedResolver` when the connection is made, on the very addresses
    it uses."""
    host = urlsplit(url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        # aiohttp takes a host of digits and dots, or with a colon, for an address and does
        # not look it up: one that is not a canonical address ("127.1", "2130706433") is
        # refused here, whatever aiohttp's version then makes of it.
        if ":" in host or host.replace(".", "").isdigit():
            raise ToolError(f"{host} is not an IP address written in the usual form.") from None
        return
    why = refusal(host, address, exact)
    if why is not None:
        raise ToolError(why)


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


async def fetch_text(
    url: str, config: FetchUrlConfig, dns: AbstractResolver | None = None
) -> dict[str, Any]:
    """``dns``: the resolver behind the address check (the system's by default)."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ToolError("Only http and https URLs can be fetched.")
    timeout = aiohttp.ClientTimeout(total=config.timeout_s)
    resolver = CheckedResolver(dns)
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
    try:
        async with aiohttp.ClientSession(
            timeout=timeout, trust_env=False, connector=connector
        ) as session:
            return await asyncio.wait_for(_fetch(session, url, config, resolver), config.timeout_s)
    except TimeoutError:
        raise ToolError(f"Fetching {url} took longer than {config.timeout_s:g} s.") from None
    except aiohttp.ClientConnectorError as exc:
        if isinstance(exc.os_error, AddressRefused):
            raise ToolError(str(exc.os_error)) from None
        if isinstance(exc.os_error, socket.gaierror):
            raise ToolError(f"Could not resolve {urlsplit(url).hostname}.") from None
        raise ToolError(f"Could not fetch {url}: {type(exc).__name__}.") from None
    except aiohttp.ClientError as exc:
        raise ToolError(f"Could not fetch {url}: {type(exc).__name__}.") from None
    finally:
        await resolver.close()


async def _fetch(
    session: aiohttp.ClientSession, url: str, config: FetchUrlConfig, resolver: CheckedResolver
) -> dict[str, Any]:
    current = url
    for _ in range(config.max_redirects + 1):
        pattern = _matching_pattern(current, config.allowed_hosts)
        if pattern is None:
            raise ToolError(
                f"The host of {current} is not on the allow-list. "
                f"Allowed: {', '.join(config.allowed_hosts)}."
            )
        exact = not any(ch in pattern for ch in "*?[")
        check_literal_address(current, exact)
        resolver.allow(urlsplit(current).hostname or "", exact)
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
