"""fetch_url's DNS: one lookup per connection, and the connection goes only to addresses
that lookup returned and the address rule (address_rule.py) let through, so a DNS answer
that changes between a check and the connect (DNS rebinding) cannot reach an internal
address."""

from __future__ import annotations

import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from tools.builtin.address_rule import Address, judge


class AddressRefused(OSError):
    """The host points only to addresses fetch_url may not reach; the message says why."""


def refusal(host: str, address: Address, exact: bool) -> str | None:
    """Why ``address`` may not be reached for ``host`` (the rule that refused it), or None.
    ``exact``: the allow-list names the host exactly (see :mod:`address_rule`)."""
    refused = judge(address, exact)
    return None if refused is None else refused.message(host)


class CheckedResolver(AbstractResolver):
    """Resolves only hosts it was told about (:meth:`allow`, with whether the allow-list
    names them exactly) and returns only the addresses the rule lets through."""

    def __init__(self, inner: AbstractResolver | None = None) -> None:
        self._inner = inner
        self._exact: dict[str, bool] = {}

    def allow(self, host: str, exact: bool) -> None:
        self._exact[host.lower().rstrip(".")] = exact

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        name = host.lower().rstrip(".")
        if name not in self._exact:
            raise AddressRefused(f"{host} is not on the allow-list.")
        if self._inner is None:
            self._inner = DefaultResolver()
        results = await self._inner.resolve(host, port, family)
        kept: list[ResolveResult] = []
        reasons: list[str] = []
        for result in results:
            why = refusal(host, ipaddress.ip_address(result["host"]), self._exact[name])
            if why is None:
                kept.append(result)
            else:
                reasons.append(why)
        if not kept:
            raise AddressRefused(reasons[0] if reasons else f"Could not resolve {host}.")
        return kept

    async def close(self) -> None:
        if self._inner is not None:
            await self._inner.close()
