"""fetch_url against a loopback web server: allow-list, size and time limits, redirects."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from tools import ToolError
from tools.builtin import checked_resolver
from tools.builtin.web_fetch import fetch_text, host_allowed, html_to_text, make_fetch_url
from tools.config import FetchUrlConfig

PAGE = """<html><head><title> Flour  guide </title><style>p{color:red}</style></head>
<body><h1>Flour</h1><script>alert('x')</script><p>Type 550 is
 common.</p><ul><li>one</li><li>two</li></ul></body></html>"""


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="x" * 100_000, content_type="text/plain")

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.Response(text="late")

    async def binary(request: web.Request) -> web.Response:
        return web.Response(body=b"\x89PNG", content_type="image/png")

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="nope")

    async def hop(request: web.Request) -> web.Response:
        raise web.HTTPFound("/page")

    async def away(request: web.Request) -> web.Response:
        raise web.HTTPFound("http://localhost:1/elsewhere")

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    app = web.Application()
    for path, handler in [
        ("/page", page),
        ("/big", big),
        ("/slow", slow),
        ("/png", binary),
        ("/missing", missing),
        ("/hop", hop),
        ("/away", away),
        ("/loop", loop),
    ]:
        app.router.add_get(path, handler)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.2)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def config(**kwargs: object) -> FetchUrlConfig:
    return FetchUrlConfig(allowed_hosts=["127.0.0.1"], **kwargs)


async def test_reads_the_text_of_a_page(site: str) -> None:
    result = await fetch_text(f"{site}/page", config())
    assert result["title"] == "Flour guide"
    assert result["text"] == "Flour\nType 550 is common.\none\ntwo"
    assert result["status"] == 200
    assert result["truncated"] is False


async def test_size_limit(site: str) -> None:
    result = await fetch_text(f"{site}/big", config(max_bytes=1000))
    assert len(result["text"]) == 1000
    assert result["truncated"] is True


async def test_time_limit(site: str) -> None:
    with pytest.raises(ToolError, match=r"took longer than 0\.3 s"):
        await fetch_text(f"{site}/slow", config(timeout_s=0.3))


async def test_hosts_off_the_list_are_refused(site: str) -> None:
    only_example = FetchUrlConfig(allowed_hosts=["example.com"])
    with pytest.raises(ToolError, match="not on the allow-list"):
        await fetch_text(f"{site}/page", only_example)


async def test_redirects_are_checked_against_the_list(site: str) -> None:
    assert (await fetch_text(f"{site}/hop", config()))["url"] == f"{site}/page"
    with pytest.raises(ToolError, match=r"localhost.*not on the allow-list"):
        await fetch_text(f"{site}/away", config())
    with pytest.raises(ToolError, match="Too many redirects"):
        await fetch_text(f"{site}/loop", config(max_redirects=2))


async def test_other_refusals(site: str) -> None:
    with pytest.raises(ToolError, match=r"image/png, not text"):
        await fetch_text(f"{site}/png", config())
    with pytest.raises(ToolError, match="HTTP 404"):
        await fetch_text(f"{site}/missing", config())
    with pytest.raises(ToolError, match="Only http and https"):
        await fetch_text("file:///etc/passwd", config())
    with pytest.raises(ToolError, match="Could not fetch"):
        await fetch_text("http://127.0.0.1:9/", config())


def test_host_patterns() -> None:
    assert host_allowed("https://docs.python.org/3/", ["docs.python.org"])
    assert host_allowed("https://a.b.example.com/x", ["*.example.com"])
    assert not host_allowed("https://example.com.evil.io/", ["example.com"])
    assert not host_allowed("https://evil.io/?example.com", ["example.com"])
    assert host_allowed("http://127.0.0.1:8080/", ["127.0.0.1:8080"])
    assert not host_allowed("http://127.0.0.1:8081/", ["127.0.0.1:8080"])
    assert host_allowed("http://EXAMPLE.com/", ["example.com"])


def test_html_to_text_skips_scripts_and_styles() -> None:
    _, text = html_to_text(PAGE)
    assert "alert" not in text and "color" not in text


async def test_the_tool_describes_its_hosts(site: str) -> None:
    fetch_url = make_fetch_url(config())
    assert "127.0.0.1" in fetch_url.description
    assert fetch_url.parameters["required"] == ["url"]
    result = await fetch_url.invoke({"url": f"{site}/page"})
    assert result["title"] == "Flour guide"


LOOPBACK = r"refused by the loopback rule \(127\.0\.0\.0/8\): fetched only from a host"


async def test_internal_addresses_need_an_exact_allow_entry(site: str) -> None:
    port = site.rsplit(":", 1)[1]
    # A glob that happens to cover a loopback address is not enough...
    with pytest.raises(ToolError, match=LOOPBACK):
        await fetch_text(f"{site}/page", FetchUrlConfig(allowed_hosts=["127.0.0.*"]))
    with pytest.raises(ToolError, match=LOOPBACK):
        await fetch_text(f"{site}/page", FetchUrlConfig(allowed_hosts=["*"]))
    # ...nor is a name that resolves to one.
    with pytest.raises(ToolError, match=r"localhost points to .*loopback rule"):
        await fetch_text(f"http://localhost:{port}/page", FetchUrlConfig(allowed_hosts=["local*"]))
    # Naming the host exactly allows it (an intranet wiki, say).
    exact = FetchUrlConfig(allowed_hosts=["localhost"])
    assert (await fetch_text(f"http://localhost:{port}/page", exact))["title"] == "Flour guide"
    # Link-local and cloud metadata never, named exactly or not.
    for host in ("169.254.169.254", "100.100.100.200", "[fd00:ec2::254]", "[fe80::1%25eth0]"):
        named = FetchUrlConfig(allowed_hosts=[host.strip("[]")])
        for config in (named, FetchUrlConfig(allowed_hosts=["*"])):
            with pytest.raises(ToolError, match=r"rule .*: never fetched"):
                await fetch_text(f"http://{host}/latest/", config)


async def test_a_literal_address_is_judged_in_every_form(site: str) -> None:
    """aiohttp connects to a literal address without a lookup: the rule sees it first, in
    whichever form it is written; a form that is not the usual one is refused outright."""
    port = site.rsplit(":", 1)[1]
    anything = FetchUrlConfig(allowed_hosts=["*"])
    for host in ("[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[64:ff9b::7f00:1]"):
        with pytest.raises(
            ToolError, match=r"\((IPv4-mapped|IPv4-compatible|NAT64) 127\.0\.0\.1\)"
        ):
            await fetch_text(f"http://{host}:{port}/page", anything)
    for host in ("127.1", "2130706433", "017.0.0.1", "127.0.0.1."):
        with pytest.raises(ToolError, match="not an IP address written in the usual form"):
            await fetch_text(f"http://{host}:{port}/page", anything)


class ChangingDns(AbstractResolver):
    """Answers ``answers[0]`` to the first lookup, ``answers[1]`` to the second, and so on
    (the last one again after that): a DNS server rebinding a name between lookups."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self.answers[min(len(self.lookups), len(self.answers) - 1)]
        self.lookups.append(host)
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": family,
                "proto": 0,
                "flags": 0,
            }
        ]

    async def close(self) -> None:
        pass


async def test_a_name_that_rebinds_between_lookups_never_reaches_the_internal_address(
    site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first answer passes the check, the second points at the loopback site. Only one
    lookup is made, and the connection goes to the address it checked."""
    port = site.rsplit(":", 1)[1]
    # 127.0.0.2 stands in for a public address here (nothing listens on it); 127.0.0.1,
    # where the site is, stays internal.
    monkeypatch.setattr(
        checked_resolver,
        "refusal",
        lambda host, address, exact: None if str(address) == "127.0.0.2" else "internal",
    )
    dns = ChangingDns("127.0.0.2", "127.0.0.1")
    config = FetchUrlConfig(allowed_hosts=["*.example"])
    with pytest.raises(ToolError, match="Could not fetch") as refused:
        await fetch_text(f"http://rebind.example:{port}/page", config, dns)
    assert "Flour" not in str(refused.value)
    assert dns.lookups == ["rebind.example"]  # one lookup: the checked one was used


async def test_a_name_that_resolves_inside_is_refused_at_connect_time(site: str) -> None:
    port = site.rsplit(":", 1)[1]
    dns = ChangingDns("127.0.0.1")
    glob = FetchUrlConfig(allowed_hosts=["*.example"])
    with pytest.raises(ToolError, match=r"rebind\.example points to 127\.0\.0\.1, refused by"):
        await fetch_text(f"http://rebind.example:{port}/page", glob, dns)
    exact = FetchUrlConfig(allowed_hosts=["meta.example"])
    for metadata in ("169.254.169.254", "::ffff:169.254.169.254", "100.100.100.200"):
        with pytest.raises(ToolError, match="cloud metadata rule"):
            await fetch_text(f"http://meta.example:{port}/page", exact, ChangingDns(metadata))
    with pytest.raises(ToolError, match="CGNAT rule"):
        await fetch_text(f"http://cgnat.example:{port}/page", glob, ChangingDns("100.64.0.1"))
    # Named exactly, an internal host is reachable (an intranet wiki, say).
    wiki = FetchUrlConfig(allowed_hosts=["wiki.example"])
    page = await fetch_text(f"http://wiki.example:{port}/page", wiki, ChangingDns("127.0.0.1"))
    assert page["title"] == "Flour guide"


class NamedDns(ChangingDns):
    """Answers each name its own address."""

    def __init__(self, **addresses: str) -> None:
        super().__init__("")
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.answers = [self.addresses[host.split(".")[0]]]
        return await super().resolve(host, port, family)


@pytest.fixture
async def redirector() -> AsyncIterator[tuple[int, list[str]]]:
    """/to?to=URL redirects there; every request's path is recorded."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.path)
        if request.path == "/to":
            raise web.HTTPFound(request.query["to"])
        return web.Response(text="reached", content_type="text/plain")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.2)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield tcp._server.sockets[0].getsockname()[1], seen  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


async def test_a_redirect_to_a_refused_address_is_refused_before_connecting(
    redirector: tuple[int, list[str]],
) -> None:
    """www.example stands in for a public host (named exactly, so its loopback address is
    allowed); where it redirects is judged before any connection is made. The real thing,
    public address included, is in test_fetch_netns.py."""
    port, seen = redirector
    dns = NamedDns(www="127.0.0.1", inside="127.0.0.1", meta="169.254.169.254")
    config = FetchUrlConfig(allowed_hosts=["www.example", "meta.example", "*"])
    targets = {
        f"http://inside.example:{port}/target": "loopback rule",  # through the glob
        f"http://meta.example:{port}/target": "cloud metadata rule",  # named exactly
        f"http://[::ffff:127.0.0.1]:{port}/target": r"\(IPv4-mapped 127\.0\.0\.1\)",
        f"http://127.0.0.1:{port}/target": "loopback rule",
    }
    for target, rule in targets.items():
        hop = f"http://www.example:{port}/to?to={quote(target, safe='')}"
        with pytest.raises(ToolError, match=rule):
            await fetch_text(hop, config, dns)
    assert seen == ["/to"] * len(targets)  # the redirects were served; no target was
    # The same server, reached by the redirect when the target is allowed:
    allowed = f"http://www.example:{port}/to?to={quote(f'http://www.example:{port}/x')}"
    assert (await fetch_text(allowed, config, dns))["text"] == "reached"
