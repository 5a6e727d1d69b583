"""The Slack client of one turn speaks only within the owner's lease: a call is not started
when it could not end before the lease does, less a margin, and one that runs past that is
cut off, before another owner could have taken the thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bot.process.state import State
from bot.slack.client import TurnClient, web_client
from bot.state.redis.thread_key import ThreadKey
from bot.turn.store.lease import Aborted, ThreadLease
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until

THREAD = ThreadKey("T1", "C1", "100.1")


async def leased(make_state: Callable[..., State]) -> tuple[State, ThreadLease]:
    state = make_state(queue={"lock_ttl_s": 1.2})
    lease = await state.threads.locks.try_acquire(THREAD, "w1")
    assert lease is not None
    return state, lease


async def test_a_call_with_time_left_reaches_slack_through_the_guarded_client(
    fake_slack: FakeSlack, make_state: Callable[..., State]
) -> None:
    _, lease = await leased(make_state)
    client = TurnClient(web_client("xoxb-test", fake_slack.api_url), lease)
    response = await client.chat_postMessage(channel="C1", thread_ts="100.1", text="hi <!channel>")
    assert response["ok"]
    [call] = fake_slack.calls_to("chat.postMessage")
    assert call.args["text"].startswith("hi ") and "<!channel>" not in call.args["text"]


async def test_no_call_is_started_once_the_lease_has_no_time_left(
    fake_slack: FakeSlack, make_state: Callable[..., State]
) -> None:
    _, lease = await leased(make_state)
    base = web_client("xoxb-test", fake_slack.api_url)
    client = TurnClient(base, lease)
    await until(lambda: lease.time_left() == 0.0, timeout=2)
    with pytest.raises(Aborted, match=r"chat\.appendStream"):
        await client.chat_appendStream(channel="C1", ts="1.1", markdown_text="late")
    await base.chat_postMessage(channel="C1", text="a marker, sent without the lease")
    assert [c.method for c in fake_slack.calls] == ["chat.postMessage"]


async def test_a_slow_slack_call_is_cut_off_before_the_lock_expires(
    fake_slack: FakeSlack, make_state: Callable[..., State]
) -> None:
    state, lease = await leased(make_state)
    fake_slack.latency_s = 10.0  # Slack takes the append and does not answer
    client = TurnClient(web_client("xoxb-test", fake_slack.api_url), lease)
    with pytest.raises(Aborted, match="cut off"):
        await client.chat_appendStream(channel="C1", ts="1.1", markdown_text="slow")
    assert asyncio.get_running_loop().time() >= lease.calls_end
    assert await state.client.pttl(state.keys.lock(THREAD)) >= 2 * lease.margin_s * 1000 - 100
