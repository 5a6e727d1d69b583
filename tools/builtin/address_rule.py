"""Which addresses fetch_url may connect to (pure): every address that is globally routable,
and nothing else. An IPv6 form that carries an IPv4 address (IPv4-mapped, IPv4-compatible,
6to4, Teredo, NAT64) is judged by the IPv4 address inside it.

Each refused range is one :class:`Rule`; the most specific rule that holds an address is the
one that refuses it (so the cloud metadata address inside CGNAT or unique-local space is
named as such). A few kinds (loopback, private, CGNAT, unique-local) may be reached when the
allow-list names the host exactly, never through a glob: an admin's own internal service.
Link-local and cloud metadata addresses, and everything else here, are refused always."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Rule:
    network: Network
    name: str
    exempt_when_named_exactly: bool


def _rules(*rows: tuple[str, str, bool]) -> tuple[Rule, ...]:
    return tuple(Rule(ipaddress.ip_network(net), name, exempt) for net, name, exempt in rows)


NAMED_EXACTLY = True
ALWAYS = False

RULES: tuple[Rule, ...] = _rules(
    # IPv4 (RFC 6890 and the IANA special-purpose registry)
    ("0.0.0.0/8", "unspecified", ALWAYS),  # "this network"; 0.0.0.0 reaches this host
    ("10.0.0.0/8", "private", NAMED_EXACTLY),
    ("100.64.0.0/10", "CGNAT", NAMED_EXACTLY),
    ("100.100.100.200/32", "cloud metadata", ALWAYS),  # Alibaba Cloud
    ("127.0.0.0/8", "loopback", NAMED_EXACTLY),
    ("169.254.0.0/16", "link-local", ALWAYS),
    ("169.254.169.254/32", "cloud metadata", ALWAYS),  # AWS, GCP, Azure, ...
    ("172.16.0.0/12", "private", NAMED_EXACTLY),
    ("192.0.0.0/24", "reserved", ALWAYS),  # IETF protocol assignments
    ("192.0.2.0/24", "documentation", ALWAYS),
    ("192.88.99.0/24", "reserved", ALWAYS),  # the deprecated 6to4 relay anycast
    ("192.168.0.0/16", "private", NAMED_EXACTLY),
    ("198.18.0.0/15", "benchmark", ALWAYS),
    ("198.51.100.0/24", "documentation", ALWAYS),
    ("203.0.113.0/24", "documentation", ALWAYS),
    ("224.0.0.0/4", "multicast", ALWAYS),
    ("240.0.0.0/4", "reserved", ALWAYS),
    ("255.255.255.255/32", "broadcast", ALWAYS),
    # IPv6. Global unicast is 2000::/3; the three rows marked "outside" are the rest of the
    # space, so anything not named more specifically below is refused as reserved.
    ("::/3", "reserved", ALWAYS),  # outside 2000::/3
    ("4000::/2", "reserved", ALWAYS),  # outside 2000::/3
    ("8000::/1", "reserved", ALWAYS),  # outside 2000::/3
    ("::/128", "unspecified", ALWAYS),
    ("::1/128", "loopback", NAMED_EXACTLY),
    ("100::/64", "reserved", ALWAYS),  # discard-only
    ("2001::/23", "reserved", ALWAYS),  # IETF protocol assignments (Teredo is unwrapped)
    ("2001:2::/48", "benchmark", ALWAYS),
    ("2001:db8::/32", "documentation", ALWAYS),
    ("3fff::/20", "documentation", ALWAYS),
    ("fc00::/7", "unique-local", NAMED_EXACTLY),
    ("fd00:ec2::254/128", "cloud metadata", ALWAYS),  # AWS over IPv6
    ("fe80::/10", "link-local", ALWAYS),
    ("fec0::/10", "site-local", ALWAYS),  # deprecated
    ("ff00::/8", "multicast", ALWAYS),
)

_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


def rule_for(address: Address) -> Rule | None:
    """The most specific rule whose network holds ``address``, or None (globally routable).
    The address is taken as it is: see :func:`judged_addresses` for the forms inside IPv6."""
    holding = [r for r in RULES if r.network.version == address.version and address in r.network]
    return max(holding, key=lambda r: r.network.prefixlen, default=None)


def judged_addresses(address: Address) -> list[tuple[Address, str]]:
    """The addresses to judge for ``address``, each with the form it was found in: the IPv4
    address an IPv6 address carries (a connection to it reaches that IPv4 host, directly or
    through a relay or translator), else the address itself (form "")."""
    if isinstance(address, ipaddress.IPv4Address):
        return [(address, "")]
    plain = ipaddress.IPv6Address(int(address))  # without a scope id
    if address.ipv4_mapped is not None:
        return [(address.ipv4_mapped, "IPv4-mapped")]
    if address.sixtofour is not None:
        return [(address.sixtofour, "6to4")]
    if address.teredo is not None:
        server, client = address.teredo
        return [(server, "Teredo server"), (client, "Teredo client")]
    if any(plain in prefix for prefix in _NAT64):
        # The IPv4 address in the last 32 bits: the /96 form DNS64 synthesises.
        return [(ipaddress.IPv4Address(int(plain) & 0xFFFFFFFF), "NAT64")]
    if plain in _IPV4_COMPATIBLE and int(plain) > 1:  # :: and ::1 are themselves
        return [(ipaddress.IPv4Address(int(plain)), "IPv4-compatible")]
    return [(address, "")]


@dataclass(frozen=True)
class Refusal:
    """Why an address may not be reached: the rule, and the address it judged."""

    address: Address
    judged: Address
    form: str
    rule: Rule
    exact: bool

    def message(self, host: str) -> str:
        shown = f"{self.address} ({self.form} {self.judged})" if self.form else f"{self.address}"
        said = (
            f"{host} points to {shown}, refused by the {self.rule.name} rule ({self.rule.network})"
        )
        if self.rule.exempt_when_named_exactly:
            return f"{said}: fetched only from a host the allow-list names exactly, not a glob."
        return f"{said}: never fetched, even from a host the allow-list names exactly."


def judge(address: Address, exact: bool) -> Refusal | None:
    """Why ``address`` may not be reached, or None. ``exact``: the allow-list names the host
    exactly (no glob), which lets it point to a loopback, private, CGNAT or unique-local
    address."""
    for judged, form in judged_addresses(address):
        rule = rule_for(judged)
        if rule is not None and not (exact and rule.exempt_when_named_exactly):
            return Refusal(address, judged, form, rule, exact)
    return None
