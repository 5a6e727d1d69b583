"""The signed requests already accepted, on the real Redis (and a Redis Cluster): the first
arrival is remembered for as long as its signature is valid, a second is a replay; where
replicas must confirm writes, one they did not confirm is not taken as remembered."""

from __future__ import annotations

import time

import pytest

from bot.process.state import State
from bot.state.redis.errors import NotReplicated
from bot.state.redis.replication import Replication
from bot.state.signed_requests import MARGIN_S, VALID_S, SignedRequests


@pytest.mark.cluster
async def test_a_request_is_accepted_once_while_its_signature_is_valid(state: State) -> None:
    signed = state.shared.signed
    stamp = str(int(time.time()))
    assert await signed.first_time(stamp, "v0=aa")
    assert not await signed.first_time(stamp, "v0=aa")  # the replay
    assert await signed.first_time(stamp, "v0=bb")  # another request
    ttl = await state.client.ttl(state.keys.signed_request(stamp, "v0=aa"))
    assert VALID_S < ttl <= VALID_S + MARGIN_S


async def test_unconfirmed_by_replicas_it_is_not_taken_as_remembered(state: State) -> None:
    """The test Redis has no replica: with one required, the check cannot be made and the
    caller refuses the request (bot/slack/inbound/replays.py)."""
    signed = SignedRequests(state.client, state.keys, Replication(1, timeout_ms=100))
    with pytest.raises(NotReplicated):
        await signed.first_time(str(int(time.time())), "v0=cc")
