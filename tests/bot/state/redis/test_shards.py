"""Which slot each key lands in: the keys one atomic step touches share a slot, the shards
spread over the slot space, and one shard (a single Redis) keeps the keys of old."""

from __future__ import annotations

from itertools import pairwise

import pytest
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from bot.config.errors import ConfigError
from bot.config.loading import parse_config
from bot.state.redis.keys import Keys
from bot.state.redis.shards import Shards, shard_tag
from bot.state.redis.thread_key import ThreadKey

THREAD = ThreadKey("T1", "C1", "1700000000.000100")


def slot(key: str) -> int:
    return int(key_slot(key.encode()))


def test_a_threads_keys_its_turns_and_its_shards_lists_share_one_slot() -> None:
    keys = Keys("agent:", Shards(16))
    shard = keys.shards.of(THREAD)
    entry = keys.shards.qualify(shard, "1700000000000-0")
    request = keys.shards.qualify(keys.shards.of_id(entry), "ab12cd34ef56ab78")
    together = [
        keys.history(THREAD),
        keys.history_bytes(THREAD),
        keys.thread_queue(THREAD),
        keys.thread_current(THREAD),
        keys.participation(THREAD),
        keys.lock(THREAD),
        keys.stop(THREAD),
        keys.stopped_stream(THREAD, "1700000000.000200"),
        keys.seen_event(THREAD, "T1", "Ev1"),
        keys.seen_message(THREAD, "T1", "C1", "1700000000.000200"),
        keys.asides(THREAD),
        keys.asides_taken(THREAD),
        keys.greeted(THREAD),
        keys.pane_context(THREAD),
        keys.turn(entry),
        keys.turn_prefix(shard) + entry,
        keys.journal(entry),
        keys.reruns(entry),
        keys.turn_approvals(entry),
        keys.approval(request),
        keys.turns(shard),
        keys.dead_turns(shard),
        keys.notices(shard),
        keys.notice_data(shard),
        keys.audit(shard),
        keys.usage(shard, "T1", "U1", "2026-11-25"),
        keys.usage_users(shard, "T1", "2026-11-25"),
        keys.usage_prefix(shard, "T1") + "2026-11-25:U1",
    ]
    assert {slot(key) for key in together} == {slot(keys.turns(shard))}
    assert all(key.startswith("agent:{") for key in together)


def test_a_teams_keys_and_its_audit_entries_share_one_slot() -> None:
    keys = Keys("agent:", Shards(16))
    together = [
        keys.grants("T1", "U1"),
        keys.granted_users("T1"),
        keys.roles("T1", "U1", False),
        keys.roles("T1", "U1", True),
        keys.roles_generation("T1", "U1"),
        keys.budget("T1", "2026-11-25", "user:U1"),
        keys.budget("T1", "2026-11-25", "workspace"),
        keys.feedback("T1"),
        keys.feedback_day("T1", "2026-11-25"),
        keys.feedback_votes("T1", "C1", "1.2"),
        keys.audit(keys.team_shard("T1")),
        keys.usage(keys.team_shard("T1"), "T1", "U1", "2026-11-25"),
    ]
    assert len({slot(key) for key in together}) == 1
    question = "q-1234"
    assert slot(keys.elicitation(question)) == slot(keys.elicitation_answer(question))


def test_threads_spread_over_every_shard_and_shards_over_the_slot_space() -> None:
    shards = Shards(16)
    used = {shards.of(ThreadKey("T1", f"C{n % 7}", f"17000000{n}.0001")) for n in range(2000)}
    assert used == set(range(16))
    slots = sorted(slot(shard_tag(n)) for n in range(16))
    # Each shard's slot is just after its target (its bits reversed): a 16th of the space
    # apart, so three primaries with a third of the slots each hold 5 or 6 shards.
    gaps = [b - a for a, b in pairwise(slots)]
    assert all(abs(gap - REDIS_CLUSTER_HASH_SLOTS // 16) < 16 for gap in gaps)
    thirds = [sum(1 for s in slots if s * 3 // REDIS_CLUSTER_HASH_SLOTS == n) for n in range(3)]
    assert sorted(thirds) == [5, 5, 6]


def test_a_shard_keeps_its_tag_when_the_number_of_shards_changes() -> None:
    assert Keys("a:", Shards(16)).turns(3) == Keys("a:", Shards(64)).turns(3)


def test_ids_name_their_shard() -> None:
    shards = Shards(16)
    entry = shards.qualify(11, "1700000000000-0")
    assert entry == "11/1700000000000-0"
    assert shards.of_id(entry) == 11
    assert Shards.bare(entry) == "1700000000000-0"
    for forged in ("x/1", "99/1", "²/1", "-1/1", "/1", "1e3/1"):
        assert shards.of_id(forged) == 0
    single = Shards()
    assert single.qualify(0, "1700000000000-0") == "1700000000000-0"
    assert single.of_id("1700000000000-0") == 0
    assert Shards.bare("1700000000000-0") == "1700000000000-0"


def test_one_shard_keeps_the_keys_of_a_bot_without_shards() -> None:
    keys = Keys("agent:")
    assert keys.turns(0) == "agent:turns"
    assert keys.dead_turns(0) == "agent:turns:dead"
    assert keys.notices(0) == "agent:notices"
    assert keys.audit(0) == "agent:audit"
    assert keys.history(THREAD) == f"agent:history:{THREAD}"
    assert keys.lock(THREAD) == f"agent:lock:{THREAD}"
    assert keys.turn("1700000000000-0") == "agent:turn:1700000000000-0"
    assert keys.approval("ab12") == "agent:approval:ab12"
    assert keys.roles("T1", "U1", True) == "agent:cache:roles:T1:U1:external"
    assert keys.usage(0, "T1", "U1", "2026-11-25") == "agent:usage:T1:2026-11-25:U1"
    assert keys.stopped_stream(THREAD, "1.2") == "agent:stopped-stream:C1:1.2"
    assert keys.seen_event(THREAD, "T1", "Ev1") == "agent:seen:event:T1:Ev1"


@pytest.mark.parametrize("prefix", ["app:{x}:", "app}:"])
def test_a_cluster_refuses_a_prefix_with_a_hash_tag(prefix: str) -> None:
    with pytest.raises(ConfigError, match=r"redis.*key_prefix may not hold"):
        parse_config(f"redis:\n  cluster: true\n  key_prefix: '{prefix}'\n")
    assert parse_config(f"redis:\n  key_prefix: '{prefix}'\n").redis.key_prefix == prefix


def test_the_number_of_shards_is_bounded() -> None:
    with pytest.raises(ConfigError, match=r"redis.shards"):
        parse_config("redis:\n  cluster: true\n  shards: 1\n")
    with pytest.raises(ValueError, match="between 1 and 1024"):
        Shards(0)
