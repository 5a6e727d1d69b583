"""Fixtures of the Redis plumbing's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.redis_sentinel import PrivateSentinel


@pytest.fixture
def sentinel() -> Iterator[PrivateSentinel]:
    """A private primary, its replica (in sync) and a Sentinel watching them."""
    setup = PrivateSentinel()
    setup.start()
    try:
        yield setup
    finally:
        setup.close()
