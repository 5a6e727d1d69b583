"""fetch_url against real servers on an address of every refused range, inside a network
namespace of its own (``unshare -rn``, ``ip addr add ... dev lo``): netns_fetch.py does the
fetching there and reports which servers accepted a connection. A refused address never
does; an allowed one does; and with the rule switched off each server is reached (so a
refusal is the rule's doing, not an unreachable server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# One run of the program serves every test here: keep them on one xdist worker.
pytestmark = pytest.mark.xdist_group("netns_fetch")

ROOT = Path(__file__).resolve().parents[3]
# TCP cannot connect to these at all, rule or no rule (the kernel answers EINVAL).
UNREACHABLE_ANYWAY = {"multicast", "broadcast", "multicast-v6"}


def _namespaces_refused() -> str | None:
    try:
        done = subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10)
    except FileNotFoundError:
        return "unshare (util-linux) is not installed"
    if done.returncode != 0:
        return f"unshare -rn is not permitted here: {done.stderr.decode().strip()}"
    return None


REFUSED = _namespaces_refused()


@pytest.fixture(scope="module")
def report() -> list[dict[str, Any]]:
    if REFUSED is not None:
        pytest.skip(f"needs a user and network namespace: {REFUSED}")
    command = ["unshare", "-rn", sys.executable, "-m", "tests.tools.builtin.netns_fetch"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    for row in rows:  # shown with -s, or when an assertion fails
        print(f"{row['case']:8} {row['address']:28} {row['outcome']:8} {row['reached']}")
    return rows


def rows_of(report: list[dict[str, Any]], case: str) -> list[dict[str, Any]]:
    rows = [row for row in report if row["case"] == case]
    assert rows
    return rows


def refused_by_its_rule(row: dict[str, Any]) -> bool:
    return row["outcome"] == "refused" and f"refused by the {row['rule']} rule" in row["message"]


def test_a_refused_address_never_receives_a_connection(report: list[dict[str, Any]]) -> None:
    """By name through a glob, as a literal address (the allow-list is "*"), and after a
    redirect from an allowed public server: refused, by its rule, with no connection."""
    for case in ("glob", "literal"):
        for row in rows_of(report, case):
            if row["rule"] is not None:
                assert refused_by_its_rule(row), row
                assert row["reached"] == [], row


def test_a_redirect_to_a_refused_address_is_refused_before_connecting(
    report: list[dict[str, Any]],
) -> None:
    for row in rows_of(report, "redirect"):
        assert refused_by_its_rule(row), row
        assert row["reached"] == ["public"], row  # only the server that redirected


def test_named_exactly_only_loopback_private_cgnat_and_unique_local_are_reached(
    report: list[dict[str, Any]],
) -> None:
    exact = rows_of(report, "exact")
    for row in exact:
        if row["exempt"]:
            assert row["outcome"] == "fetched" and row["reached"] == [row["label"]], row
        else:
            assert refused_by_its_rule(row), row
            assert row["reached"] == [], row
    reached = {row["label"] for row in exact if row["reached"]}
    assert {"loopback", "private-10", "cgnat", "unique-local", "mapped", "nat64"} <= reached
    assert not reached & {"metadata", "metadata-alibaba", "metadata-v6", "link-local-v6"}


def test_globally_routable_addresses_are_fetched(report: list[dict[str, Any]]) -> None:
    public = [row for row in rows_of(report, "glob") if row["rule"] is None]
    assert {row["label"] for row in public} == {
        "public",
        "public-v6",
        "public-6to4",
        "public-nat64",
    }
    for row in public:
        assert row["outcome"] == "fetched" and row["reached"] == [row["label"]], row


def test_a_rebinding_name_is_looked_up_once_and_pinned(report: list[dict[str, Any]]) -> None:
    """rebind.test answers a public address, then a loopback server on the same port."""
    [row] = rows_of(report, "rebind")
    assert row["lookups"] == ["rebind"]
    assert row["outcome"] == "fetched" and row["reached"] == ["public"], row


def test_without_the_rule_every_server_is_reached(report: list[dict[str, Any]]) -> None:
    """The control: the refusals above are the rule's, not unreachable servers."""
    for row in rows_of(report, "control"):
        if row["label"] in UNREACHABLE_ANYWAY:
            assert row["reached"] == [], row
        else:
            assert row["outcome"] == "fetched" and row["reached"] == [row["label"]], row
