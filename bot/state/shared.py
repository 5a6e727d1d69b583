"""The records shared across threads, bundled (one per process): who did what, what it
cost, what people thought of the answers, who may use which tools, the signed requests
already accepted, each person's open approval requests, channels' settings set in Slack,
their memories' notes, and schedules."""

from __future__ import annotations

from dataclasses import dataclass

from bot.state.approval_quota import ApprovalQuota
from bot.state.audit import AuditLog
from bot.state.channel_memory import ChannelMemory
from bot.state.channel_settings import ChannelOverrides
from bot.state.feedback import FeedbackLog
from bot.state.grants import RoleGrants
from bot.state.policy_reads import PolicyReads
from bot.state.role_cache import RedisCache, RoleCache
from bot.state.schedules import ScheduleStore
from bot.state.signed_requests import SignedRequests
from bot.state.switches import ToolSwitches
from bot.state.usage import UsageCounters


@dataclass
class SharedRecords:
    audit: AuditLog
    usage: UsageCounters
    feedback: FeedbackLog
    switches: ToolSwitches
    grants: RoleGrants
    cache: RedisCache  # Slack's answers (users, channels), cached
    roles: RoleCache  # resolved roles, guarded by a generation per person
    policy_reads: PolicyReads  # the roles and the switches in one round trip
    signed: SignedRequests  # slash commands and interactions accepted: a replay is refused
    approval_quota: ApprovalQuota  # each person's approval requests waiting for a decision
    channels: ChannelOverrides  # channels' settings set in Slack (/agent channel)
    memory: ChannelMemory  # the notes of channels' (and people's DM) memories
    schedules: ScheduleStore  # people's schedules and the firing of their runs
