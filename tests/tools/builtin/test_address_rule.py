"""The address rule of fetch_url (pure): every range it refuses, by the rule that names it;
the IPv6 forms that carry an IPv4 address judged by that address; what naming a host
exactly allows, and what it never does."""

from __future__ import annotations

import ipaddress

import pytest

from tools.builtin.address_rule import RULES, judge, judged_addresses, rule_for

# One address in each row of the table, with the row's rule and network.
EACH_ROW = [
    ("0.0.0.0", "unspecified", "0.0.0.0/8"),
    ("0.1.2.3", "unspecified", "0.0.0.0/8"),
    ("10.200.0.1", "private", "10.0.0.0/8"),
    ("100.64.0.0", "CGNAT", "100.64.0.0/10"),
    ("100.127.255.255", "CGNAT", "100.64.0.0/10"),
    ("100.100.100.200", "cloud metadata", "100.100.100.200/32"),
    ("127.0.0.1", "loopback", "127.0.0.0/8"),
    ("127.255.0.9", "loopback", "127.0.0.0/8"),
    ("169.254.0.1", "link-local", "169.254.0.0/16"),
    ("169.254.169.254", "cloud metadata", "169.254.169.254/32"),
    ("172.31.255.254", "private", "172.16.0.0/12"),
    ("192.0.0.170", "reserved", "192.0.0.0/24"),
    ("192.0.2.1", "documentation", "192.0.2.0/24"),
    ("192.88.99.1", "reserved", "192.88.99.0/24"),
    ("192.168.1.1", "private", "192.168.0.0/16"),
    ("198.19.255.1", "benchmark", "198.18.0.0/15"),
    ("198.51.100.1", "documentation", "198.51.100.0/24"),
    ("203.0.113.1", "documentation", "203.0.113.0/24"),
    ("239.255.255.250", "multicast", "224.0.0.0/4"),
    ("250.1.2.3", "reserved", "240.0.0.0/4"),
    ("255.255.255.255", "broadcast", "255.255.255.255/32"),
    ("1000::1", "reserved", "::/3"),
    ("5f00::1", "reserved", "4000::/2"),
    ("a000::1", "reserved", "8000::/1"),
    ("::", "unspecified", "::/128"),
    ("::1", "loopback", "::1/128"),
    ("100::1", "reserved", "100::/64"),
    ("2001:10::1", "reserved", "2001::/23"),
    ("2001:2::1", "benchmark", "2001:2::/48"),
    ("2001:db8:1::1", "documentation", "2001:db8::/32"),
    ("3fff:abc::1", "documentation", "3fff::/20"),
    ("fc00::1", "unique-local", "fc00::/7"),
    ("fdff:1::1", "unique-local", "fc00::/7"),
    ("fd00:ec2::254", "cloud metadata", "fd00:ec2::254/128"),
    ("fe80::1", "link-local", "fe80::/10"),
    ("febf::1", "link-local", "fe80::/10"),
    ("fe80::1%eth0", "link-local", "fe80::/10"),
    ("fec0::1", "site-local", "fec0::/10"),
    ("ff02::1", "multicast", "ff00::/8"),
]

GLOBAL = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "100.63.255.255",  # just below CGNAT
    "100.128.0.0",  # just above
    "172.32.0.1",
    "192.0.1.255",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001::1",
    "2620:4f:8000::1",
    "::ffff:8.8.8.8",
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "64:ff9b::8.8.8.8",
    "64:ff9b:1::8.8.8.8",
]


def address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


def teredo(server: str, client: str) -> str:
    """A Teredo address (RFC 4380): 2001:0::/32, the server, flags, port, the client
    obfuscated (every bit flipped)."""
    inverted = int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF
    value = (0x20010000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | inverted
    return str(ipaddress.IPv6Address(value))


def test_every_row_of_the_table_is_tested() -> None:
    assert {str(rule.network) for rule in RULES} == {net for _, _, net in EACH_ROW}


@pytest.mark.parametrize(("text", "name", "network"), EACH_ROW)
def test_each_range_is_refused_by_its_own_rule(text: str, name: str, network: str) -> None:
    refused = judge(address(text), exact=False)
    assert refused is not None
    assert (refused.rule.name, str(refused.rule.network)) == (name, network)
    assert f"refused by the {name} rule ({network})" in refused.message("h.example")


@pytest.mark.parametrize("text", GLOBAL)
def test_globally_routable_addresses_pass(text: str) -> None:
    assert judge(address(text), exact=False) is None


@pytest.mark.parametrize(
    ("text", "form", "inside"),
    [
        ("::ffff:169.254.169.254", "IPv4-mapped", "169.254.169.254"),
        ("::169.254.169.254", "IPv4-compatible", "169.254.169.254"),
        ("2002:a9fe:a9fe::1", "6to4", "169.254.169.254"),
        (teredo("169.254.169.254", "8.8.8.8"), "Teredo server", "169.254.169.254"),
        (teredo("8.8.8.8", "169.254.169.254"), "Teredo client", "169.254.169.254"),
        ("64:ff9b::169.254.169.254", "NAT64", "169.254.169.254"),
        ("64:ff9b:1::169.254.169.254", "NAT64", "169.254.169.254"),
        ("64:ff9b:1:ab::169.254.169.254", "NAT64", "169.254.169.254"),
    ],
)
def test_an_ipv4_address_inside_ipv6_is_judged(text: str, form: str, inside: str) -> None:
    assert (address(inside), form) in judged_addresses(address(text))
    for exact in (False, True):
        refused = judge(address(text), exact)
        assert refused is not None
        assert (refused.form, str(refused.judged), refused.rule.name) == (
            form,
            inside,
            "cloud metadata",
        )
        assert f"({form} {inside})" in refused.message("h")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:100.64.0.1", "CGNAT"),
        ("::ffff:0.0.0.0", "unspecified"),
        ("::10.0.0.1", "private"),
        ("::0.0.0.2", "unspecified"),
        ("2002:7f00:1::", "loopback"),
        ("2002:c0a8:101::1", "private"),
        (teredo("8.8.8.8", "127.0.0.1"), "loopback"),
        ("64:ff9b::127.0.0.1", "loopback"),
        ("64:ff9b::192.0.2.1", "documentation"),
        ("64:ff9b:1::100.64.0.1", "CGNAT"),
    ],
)
def test_every_embedded_form_is_unwrapped_before_the_rule(text: str, name: str) -> None:
    refused = judge(address(text), exact=False)
    assert refused is not None and refused.rule.name == name and refused.form


def test_the_unspecified_and_loopback_ipv6_addresses_are_themselves() -> None:
    """::/96 is IPv4-compatible space, but :: and ::1 are not 0.0.0.0 and 0.0.0.1."""
    assert judged_addresses(address("::")) == [(address("::"), "")]
    assert judged_addresses(address("::1")) == [(address("::1"), "")]


EXEMPT = [
    "127.0.0.1",
    "::1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.0.1",
    "100.64.0.1",
    "100.100.100.199",
    "fd12:3456::1",
    "fc00::1",
    "fd00:ec2::253",
    "::ffff:10.0.0.1",
    "64:ff9b::10.0.0.1",
]


@pytest.mark.parametrize("text", EXEMPT)
def test_named_exactly_loopback_private_cgnat_unique_local_are_reached(text: str) -> None:
    refused = judge(address(text), exact=False)
    assert refused is not None and refused.rule.exempt_when_named_exactly
    assert "only from a host the allow-list names exactly, not a glob" in refused.message("h")
    assert judge(address(text), exact=True) is None


ALWAYS = [
    ("169.254.169.254", "cloud metadata"),
    ("169.254.0.1", "link-local"),
    ("100.100.100.200", "cloud metadata"),
    ("fd00:ec2::254", "cloud metadata"),
    ("fe80::1", "link-local"),
    ("fe80::a9fe:a9fe%eth0", "link-local"),
    ("::ffff:169.254.169.254", "cloud metadata"),
    ("::ffff:100.100.100.200", "cloud metadata"),
    ("64:ff9b::169.254.1.1", "link-local"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("192.0.2.1", "documentation"),
    ("198.18.0.1", "benchmark"),
    ("224.0.0.1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("fec0::1", "site-local"),
]


@pytest.mark.parametrize(("text", "name"), ALWAYS)
def test_link_local_metadata_and_the_rest_are_refused_even_named_exactly(
    text: str, name: str
) -> None:
    refused = judge(address(text), exact=True)
    assert refused is not None and refused.rule.name == name
    assert refused.message("h").endswith(
        "never fetched, even from a host the allow-list names exactly."
    )


def test_only_the_four_internal_kinds_may_be_named_exactly() -> None:
    exempt = {rule.name for rule in RULES if rule.exempt_when_named_exactly}
    assert exempt == {"loopback", "private", "CGNAT", "unique-local"}
    for metadata in ("100.100.100.200", "169.254.169.254", "fd00:ec2::254"):
        rule = rule_for(address(metadata))
        assert rule is not None and not rule.exempt_when_named_exactly
        assert rule.network.prefixlen == rule.network.max_prefixlen  # the single address


def test_the_message_names_host_address_and_rule() -> None:
    refused = judge(address("::ffff:100.100.100.200"), exact=True)
    assert refused is not None
    assert refused.message("meta.example") == (
        "meta.example points to ::ffff:6464:64c8 (IPv4-mapped 100.100.100.200), refused by the "
        "cloud metadata rule (100.100.100.200/32): never fetched, even from a host the "
        "allow-list names exactly."
    )
