"""Run inside a new network namespace (``unshare -rn``; test_fetch_netns.py does): put an
address of every range fetch_url refuses on ``lo``, run a tiny HTTP server on each, and fetch
each one through the real fetch_url path (aiohttp, the checked resolver, redirects), by name
through a glob, by name named exactly, as a literal address and after a redirect from an
allowed public address. Then once more with the address rule switched off, to show every
server that can be reached at all is reached. Prints one JSON report: for each attempt, its
outcome and which servers accepted a connection meanwhile."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, quote, urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult

from tools import ToolError
from tools.builtin import checked_resolver
from tools.builtin.web_fetch import fetch_text
from tools.config import FetchUrlConfig


@dataclass(frozen=True)
class Target:
    label: str  # also its DNS name: <label>.test
    address: str  # what DNS answers and a literal URL holds
    bind: str | None  # where its server listens (None: nothing can listen there)
    rule: str | None  # the rule that refuses it; None: globally routable
    exempt: bool = False  # reached when the allow-list names the host exactly


def refused(label: str, address: str, rule: str, exempt: bool = False) -> Target:
    return Target(label, address, address, rule, exempt)


TARGETS = [
    Target("unspecified", "0.0.0.0", "0.0.0.0", "unspecified"),  # reaches this host
    refused("private-10", "10.1.2.3", "private", exempt=True),
    refused("private-172", "172.16.5.4", "private", exempt=True),
    refused("private-192", "192.168.7.8", "private", exempt=True),
    refused("cgnat", "100.64.1.2", "CGNAT", exempt=True),
    refused("metadata-alibaba", "100.100.100.200", "cloud metadata"),
    refused("loopback", "127.0.0.2", "loopback", exempt=True),
    refused("link-local", "169.254.1.1", "link-local"),
    refused("metadata", "169.254.169.254", "cloud metadata"),
    refused("ietf", "192.0.0.8", "reserved"),
    refused("test-net-1", "192.0.2.7", "documentation"),
    refused("relay-6to4", "192.88.99.1", "reserved"),
    refused("benchmark", "198.18.0.5", "benchmark"),
    refused("test-net-2", "198.51.100.7", "documentation"),
    refused("test-net-3", "203.0.113.7", "documentation"),
    refused("multicast", "224.1.2.3", "multicast"),
    refused("reserved", "240.0.0.9", "reserved"),
    refused("broadcast", "255.255.255.255", "broadcast"),
    Target("unspecified-v6", "::", "::", "unspecified"),
    refused("loopback-v6", "::1", "loopback", exempt=True),
    refused("discard-v6", "100::1", "reserved"),
    refused("below-2000-v6", "1000::1", "reserved"),
    refused("ietf-v6", "2001:10::1", "reserved"),
    refused("benchmark-v6", "2001:2::1", "benchmark"),
    refused("documentation-v6", "2001:db8::1", "documentation"),
    refused("documentation-3fff", "3fff::1", "documentation"),
    refused("above-4000-v6", "5f00::1", "reserved"),
    refused("unique-local", "fd12::1", "unique-local", exempt=True),
    refused("metadata-v6", "fd00:ec2::254", "cloud metadata"),
    refused("link-local-v6", "fe80::7%lo", "link-local"),
    refused("site-local", "fec0::1", "site-local"),
    Target("multicast-v6", "ff05::1", None, "multicast"),
    # IPv6 forms that carry an IPv4 address: judged by it.
    Target("mapped", "::ffff:127.0.0.3", "127.0.0.3", "loopback", exempt=True),
    Target("mapped-metadata", "::ffff:169.254.169.254", "169.254.169.254", "cloud metadata"),
    refused("compatible", "::7f00:4", "loopback", exempt=True),
    refused("sixtofour", "2002:a9fe:a9fe::1", "cloud metadata"),
    refused("teredo", "2001:0:a9fe:a9fe::80ff:fffe", "cloud metadata"),  # server 169.254...
    refused("nat64", "64:ff9b::a01:204", "private", exempt=True),  # 10.1.2.4
    refused("nat64-local", "64:ff9b:1::6464:64c8", "cloud metadata"),  # 100.100.100.200
    # Globally routable: allowed.
    Target("public", "93.184.216.34", "93.184.216.34", None),
    Target("public-v6", "2606:4700::1111", "2606:4700::1111", None),
    Target("public-6to4", "2002:5db8:d822::1", "2002:5db8:d822::1", None),
    Target("public-nat64", "64:ff9b::5db8:d822", "64:ff9b::5db8:d822", None),
    # rebind.test answers the public address first, then this one (on the public's port).
    refused("rebound", "127.0.0.5", "loopback", exempt=True),
]
BY_LABEL = {target.label: target for target in TARGETS}


class Dns(AbstractResolver):
    """<label>.test answers its target's address; rebind.test answers the public address
    first and a loopback one ("rebound") after that (DNS rebinding). Lookups are recorded."""

    def __init__(self) -> None:
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        label = host.removesuffix(".test")
        if label == "rebind":
            label = "public" if "rebind" not in self.lookups else "rebound"
        self.lookups.append(label if host != "rebind.test" else "rebind")
        address = BY_LABEL[label].address
        version = ipaddress.ip_address(address).version
        kind = socket.AF_INET if version == 4 else socket.AF_INET6
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": kind,
                "proto": 0,
                "flags": 0,
            }
        ]

    async def close(self) -> None:
        pass


class Servers:
    """One server per target with an address that can be listened on; counts connections."""

    def __init__(self) -> None:
        self.ports: dict[str, int] = {}
        self.connections: dict[str, int] = {}
        self._servers: list[asyncio.Server] = []

    async def start(self) -> None:
        for target in TARGETS:
            if target.bind is None:
                continue
            host = target.bind.replace("%lo", "%1")
            port = self.ports["public"] if target.label == "rebound" else 0
            serve = functools.partial(self._serve, target.label)
            server = await asyncio.start_server(serve, host, port)
            self._servers.append(server)
            self.ports[target.label] = server.sockets[0].getsockname()[1]
            self.connections[target.label] = 0

    async def _serve(
        self, label: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.connections[label] += 1
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        target = urlsplit(head.split(" ")[1])
        location = parse_qs(target.query).get("to")
        if target.path == "/to" and location:
            writer.write(f"HTTP/1.1 302 Found\r\nLocation: {location[0]}\r\n".encode())
            writer.write(b"Content-Length: 0\r\n\r\n")
        else:
            body = f"reached {label}".encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n")
            writer.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    def close(self) -> None:
        for server in self._servers:
            server.close()


def add_addresses() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    added = {"0.0.0.0", "::", "::1"}  # wildcards, and lo's own
    for target in TARGETS:
        bind = target.bind
        if bind is None or bind in added or bind.startswith("127."):
            continue  # nothing to add (each server listens on a port of its own)
        added.add(bind)
        address = ipaddress.ip_address(bind.split("%")[0])
        if address.version == 4:
            command = ["ip", "addr", "add", f"{address}/32", "dev", "lo"]
        else:
            command = ["ip", "-6", "addr", "add", f"{address}/128", "dev", "lo", "nodad"]
        subprocess.run(command, check=True)


def literal(address: str, port: int) -> str:
    host = f"[{address.replace('%', '%25')}]" if ":" in address else address
    return f"http://{host}:{port}/"


class Attempts:
    def __init__(self, servers: Servers, dns: Dns) -> None:
        self.servers = servers
        self.dns = dns
        self.report: list[dict[str, Any]] = []

    def port(self, label: str) -> int:
        return self.servers.ports.get(label, 9)  # no server: the discard port

    async def attempt(self, case: str, target: Target, url: str, hosts: list[str]) -> None:
        config = FetchUrlConfig(allowed_hosts=hosts, timeout_s=3, max_redirects=2)
        before = dict(self.servers.connections)
        try:
            await fetch_text(url, config, self.dns)
            outcome, message = "fetched", ""
        except ToolError as exc:
            outcome, message = "refused", str(exc)
        await asyncio.sleep(0.02)  # a connection the server has yet to accept
        now = self.servers.connections
        reached = sorted(label for label, n in now.items() if n > before.get(label, 0))
        self.report.append(
            {
                "case": case,
                "label": target.label,
                "address": target.address,
                "rule": target.rule,
                "exempt": target.exempt,
                "url": url,
                "outcome": outcome,
                "message": message,
                "reached": reached,
            }
        )

    async def run(self) -> None:
        for target in TARGETS:
            name = f"http://{target.label}.test:{self.port(target.label)}/"
            await self.attempt("glob", target, name, ["*.test"])
            if target.rule is None:
                continue
            await self.attempt("exact", target, name, [f"{target.label}.test"])
            url = literal(target.address, self.port(target.label))
            await self.attempt("literal", target, url, ["*"])
            hop = f"http://public.test:{self.port('public')}/to?to={quote(name, safe='')}"
            await self.attempt("redirect", target, hop, ["*.test"])
        rebind = f"http://rebind.test:{self.port('public')}/"
        lookups = len(self.dns.lookups)
        await self.attempt("rebind", BY_LABEL["rebound"], rebind, ["*.test"])
        self.report[-1]["lookups"] = self.dns.lookups[lookups:]

    async def control(self) -> None:
        """The same servers, fetched with the rule switched off: which can be reached."""
        with mock.patch.object(checked_resolver, "judge", return_value=None):
            for target in TARGETS:
                if target.rule is not None:
                    url = f"http://{target.label}.test:{self.port(target.label)}/"
                    await self.attempt("control", target, url, ["*.test"])


async def main() -> None:
    add_addresses()
    servers = Servers()
    await servers.start()
    try:
        attempts = Attempts(servers, Dns())
        await attempts.run()
        await attempts.control()
    finally:
        servers.close()
    json.dump(attempts.report, sys.stdout, indent=1)


if __name__ == "__main__":
    asyncio.run(main())
