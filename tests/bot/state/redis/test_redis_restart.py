"""Slack's events while Redis restarts or hangs: every event is accepted once Redis answers
again, and a Redis that does not answer is refused before Slack's 3-second ack runs out."""

from __future__ import annotations

import asyncio

from tests.fakes.llm_server import text
from tests.fakes.redis_server import PrivateRedis
from tests.fakes.slack_harness import SlackHarness, mention


async def test_no_event_is_refused_after_a_redis_restart(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    slack_app.redis_url = private_redis.url
    await slack_app.start(with_worker=False)
    assert slack_app.services is not None
    client = slack_app.services.state.client
    # Many connections in the pool, all of which the restart will kill.
    await asyncio.gather(*[client.blpop(f"warm:{n}", timeout=0.2) for n in range(40)])
    assert sum(c.is_connected for c in client.connection_pool._available_connections) == 40

    private_redis.stop()
    private_redis.start()  # same port, empty

    events = [
        slack_app.envelope(mention(f"question {n}", f"500.{n:06d}", channel=f"C0CH{n:03d}"))
        for n in range(50)
    ]
    results = await asyncio.gather(*[slack_app.post(event) for event in events])
    assert [status for status, _ in results] == [200] * 50
    assert max(ack_s for _, ack_s in results) < 3
    state = slack_app.services.state
    assert await state.client.xlen(state.keys.turns(0)) == 50


async def test_a_hanging_redis_is_refused_within_the_deadline_and_redelivery_works(
    slack_app: SlackHarness, private_redis: PrivateRedis
) -> None:
    slack_app.redis_url = private_redis.url
    await slack_app.start()
    slack_app.llm.add(text("Answered once Redis woke up."))
    payload = slack_app.envelope(mention("still there?", "501.000001"), "EvHANG")

    private_redis.pause()  # accepts connections, answers nothing
    try:
        status, ack_s = await slack_app.post(payload)
    finally:
        private_redis.resume()
    assert status == 503  # not acknowledged: Slack delivers it again
    assert 1.9 < ack_s < 3

    status, _ = await slack_app.post(payload, retry=1)
    assert status == 200
    [answer] = await slack_app.answered("C0CHAN", "501.000001", within=30)
    assert answer.shown == "Answered once Redis woke up."
    assert len(slack_app.llm.requests) == 1
