"""Where a connection's records live: every key one step writes (the token, its last
version, the person's and the team's lists, the refresh lock, the waiting set, the team's
audit) in the team's slot; a sign-in under way in the slot its state names, under the
state's hash; a registration in its server's shard."""

from __future__ import annotations

import hashlib

from redis.crc import key_slot

from bot.state.redis.keys import Keys, issuer_id
from bot.state.redis.shards import Shards


def slot(key: str) -> int:
    return int(key_slot(key.encode()))


def test_a_connections_keys_and_its_teams_audit_share_one_slot() -> None:
    keys = Keys("agent:", Shards(16))
    iss8 = issuer_id("https://as.example.com")
    assert iss8 == hashlib.sha256(b"https://as.example.com").hexdigest()[:16]
    together = [
        keys.oauth_token("T1", "U1", "files", iss8),
        keys.oauth_version("T1", "U1", "files"),
        keys.oauth_conns("T1", "U1"),
        keys.oauth_team_conns("T1"),
        keys.oauth_refresh("T1", "U1", "files", iss8),
        keys.oauth_waiting("T1", "U1", "files"),
        keys.audit(keys.team_shard("T1")),
        keys.grants("T1", "U1"),
    ]
    assert len({slot(key) for key in together}) == 1
    assert keys.oauth_token("T1", "U1", "files", iss8).endswith(f"oauth:token:T1:U1:files:{iss8}")
    assert keys.oauth_team_conns("T1").endswith("oauth:team-conns:T1")
    # A flow's state names the team's shard: its key is in the team's slot, and never holds
    # the state itself.
    state = keys.shards.qualify(keys.team_shard("T1"), "s3cret-state-value")
    flow = keys.oauth_flow(state)
    assert slot(flow) == slot(keys.oauth_conns("T1", "U1"))
    assert flow.endswith("oauth:flow:" + hashlib.sha256(state.encode()).hexdigest())
    assert "s3cret" not in flow
    client = keys.oauth_client("files", "https://bot.example.com/oauth/callback")
    assert slot(client) == slot(keys.turns(keys.shards.of("files")))
    assert "callback" not in client
    assert client != keys.oauth_client("files", "https://bot.example.com/other")


def test_one_shard_has_no_tags() -> None:
    keys = Keys("agent:")
    assert keys.oauth_conns("T1", "U1") == "agent:oauth:conns:T1:U1"
    assert keys.oauth_waiting("T1", "U1", "files") == "agent:oauth:waiting:T1:U1:files"
    assert keys.oauth_flow("abc") == "agent:oauth:flow:" + hashlib.sha256(b"abc").hexdigest()
