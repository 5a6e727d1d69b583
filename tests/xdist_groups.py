"""The ``xdist_group`` of each test, in its node id, where pytest-xdist failed to put it.

With ``--dist loadgroup`` each worker appends ``@<group>`` to the node id of a test marked
``xdist_group``, and the controller sends the tests sharing a suffix to one worker. xdist
3.8 writes the suffix to ``item._nodeid``, which pytest 9.2 no longer reads (its node ids are
structured, ``item._id``): the groups are dropped without a word and the tests spread over
every worker (pytest-dev/pytest-xdist#1386). Once xdist sets them again, this does nothing.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId


def group_suffix(item: pytest.Item) -> str:
    """``@<groups>`` as xdist writes it (several groups joined by ``_``), or "" if none."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return f"@{'_'.join(sorted(names))}" if names else ""


def put_groups_in_node_ids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a loadgroup worker, after xdist's own pass: add each grouped test's suffix its node
    id lacks."""
    if not config.getoption("loadgroup", default=False):
        return  # not an xdist worker, or not --dist loadgroup
    for item in items:
        suffix = group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)
