"""All Redis-backed parts of one process, built together from the config (and, for people's
sign-ins to MCP servers, the secret key from the environment)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.budget.ledger import BudgetLedger
from bot.config.environment import Environment
from bot.config.schema import AppConfig, oauth_servers
from bot.state.approval_quota import ApprovalQuota
from bot.state.audit import AuditLog
from bot.state.channel_memory import ChannelMemory
from bot.state.channel_settings import ChannelOverrides
from bot.state.feedback import FeedbackLog
from bot.state.grants import RoleGrants
from bot.state.policy_reads import PolicyReads
from bot.state.redis.connection import Redis, RedisHandle, connect
from bot.state.redis.keys import Keys
from bot.state.redis.replication import Replication
from bot.state.redis.shards import Shards
from bot.state.role_cache import RedisCache, RoleCache
from bot.state.schedules import ScheduleStore
from bot.state.shared import SharedRecords
from bot.state.signed_requests import SignedRequests
from bot.state.switches import ToolSwitches
from bot.state.usage import UsageCounters
from bot.turn.store.agent_pane import AgentPaneThreads
from bot.turn.store.approvals import Approvals
from bot.turn.store.asides import ThreadAsides
from bot.turn.store.dead_letters import DeadLetters
from bot.turn.store.elicitations import Elicitations
from bot.turn.store.history import RedisHistory
from bot.turn.store.lease import ThreadLocks
from bot.turn.store.notices import Notices
from bot.turn.store.participation import ThreadParticipation
from bot.turn.store.queue import TurnQueue
from bot.turn.store.records import TurnRecords
from bot.turn.store.stops import StopRequests
from bot.turn.store.stores import ThreadStores, TurnStores
from bot.turn.store.waiting_notes import WaitingNotes

if TYPE_CHECKING:  # loaded only with a server that signs people in (it loads the MCP SDK)
    from bot.oauth.crypto import Sealer
    from bot.oauth.side import OAuthSide


@dataclass
class State:
    handle: RedisHandle
    keys: Keys
    threads: ThreadStores  # keyed by a thread or a turn (bot/turn/store/)
    shared: SharedRecords  # across threads (bot/state/)
    budgets: BudgetLedger  # the spending limits' counters (bot/budget/)
    oauth: OAuthSide | None = None  # people's sign-ins (None: no server with auth: oauth)

    @property
    def client(self) -> Redis:
        return self.handle.client

    def turn_stores(self) -> TurnStores:
        """What a turn's owner writes."""
        return TurnStores.of(self.threads, self.shared.audit, self.shared.usage)

    async def aclose(self) -> None:
        await self.threads.queue.stop_reading()
        await self.handle.aclose()


def build_state(handle: RedisHandle, config: AppConfig, sealer: Sealer | None = None) -> State:
    """``sealer``: people's sign-ins' (read from the environment when None and a server
    signs people in)."""
    client = handle.client
    keys = Keys(config.redis.key_prefix, Shards(config.redis.shards if config.redis.cluster else 1))
    threads = thread_stores(client, keys, config, handle.replication)
    shared = shared_records(client, keys, handle.replication)
    oauth = None
    if oauth_servers(config):
        from bot.oauth.side import OAuthSide

        oauth = OAuthSide.of(
            config, sealer, client, keys, shared.audit, threads.approvals, handle.replication
        )
    return State(
        handle=handle,
        keys=keys,
        threads=threads,
        shared=shared,
        budgets=BudgetLedger(client, keys),
        oauth=oauth,
    )


def thread_stores(
    client: Redis, keys: Keys, config: AppConfig, replication: Replication | None = None
) -> ThreadStores:
    """``replication``: what must be on a replica before the bot builds on it (the queue's
    entries before the ack, a turn's steps, notices taken, approvals)."""
    idle_s = config.history.idle_ttl_s
    return ThreadStores(
        queue=TurnQueue(
            client,
            keys,
            dedup_ttl_s=config.queue.dedup_ttl_s,
            max_len=config.queue.stream_max_len,
            replication=replication,
        ),
        locks=ThreadLocks(client, keys, config.queue.lock_ttl_s),
        records=TurnRecords(client, keys, replication=replication),
        dead_letters=DeadLetters(client, keys),
        notices=Notices(client, keys, replication),
        history=RedisHistory(
            client,
            keys,
            idle_ttl_s=idle_s,
            max_turns=config.history.max_turns,
            max_bytes=config.history.max_bytes,
        ),
        participation=ThreadParticipation(client, keys, idle_s),
        asides=ThreadAsides(client, keys, idle_s),
        pane=AgentPaneThreads(client, keys, idle_s),
        stops=StopRequests(client, keys),
        elicitations=Elicitations(client, keys),
        approvals=Approvals(client, keys, replication),
        waiting_notes=WaitingNotes(client, keys),
    )


def shared_records(
    client: Redis, keys: Keys, replication: Replication | None = None
) -> SharedRecords:
    """``replication``: what must be on a replica before the bot builds on it (a signed
    request remembered before it is acted on)."""
    audit = AuditLog(client, keys)
    roles, switches = RoleCache(client, keys), ToolSwitches(client, keys)
    return SharedRecords(
        audit=audit,
        usage=UsageCounters(client, keys),
        feedback=FeedbackLog(client, keys, audit),
        switches=switches,
        grants=RoleGrants(client, keys),
        cache=RedisCache(client, keys),
        roles=roles,
        policy_reads=PolicyReads(roles, switches),
        signed=SignedRequests(client, keys, replication),
        approval_quota=ApprovalQuota(client, keys),
        channels=ChannelOverrides(client, keys, audit),
        memory=ChannelMemory(client, keys, audit),
        schedules=ScheduleStore(client, keys, audit),
    )


def busy_connections(config: AppConfig) -> int:
    """The Redis connections a Slack process holds at once when every turn runs: each turn's
    own step, as many again for what runs beside it (its lease, its delivery record, the
    acks of a burst of events), and the process's pollers: 112 measured at a concurrency of
    50 (benchmarks/slack_turns.py)."""
    return 2 * config.queue.concurrency + 16


def open_state(
    redis_url: str | None, config: AppConfig, environment: Environment | None = None
) -> State:
    """Connect to ``redis_url`` (or the embedded Redis) and build every part on it. With a
    server that signs people in, a secret key that is missing or not 32 bytes is a
    ConfigError naming its variable, before anything connects."""
    sealer = None
    if oauth_servers(config):
        from bot.oauth.crypto import sealer_from

        sealer = sealer_from(environment or Environment())
    handle = connect(
        redis_url,
        config.redis.max_connections,
        cluster=config.redis.cluster,
        replica_acks=config.redis.replica_acks,
        replica_ack_timeout_ms=config.redis.replica_ack_timeout_ms,
    )
    return build_state(handle, config, sealer)
