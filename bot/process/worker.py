"""The worker of a process: Slack turns from the queue, each run for its person with the
tools the policy gives them, in its channel's settings (read once a turn: its tools narrowed,
its instructions and notes, ``remember``, its budget), and the one place that knows which
stores each part gets."""

from __future__ import annotations

from functools import partial

from bot.channels.config import EXTERNAL
from bot.channels.prompt import channel_context
from bot.channels.reader import ChannelReader, ChannelView
from bot.channels.remember import remember_tool, with_remember
from bot.config.schema import QueueConfig
from bot.llm.model import ChatModel
from bot.process.services import Services
from bot.process.slack import SlackSide
from bot.process.state import State
from bot.schedules.outcomes import run_outcomes
from bot.schedules.run_tools import WithoutScheduling
from bot.slack.client import TurnClient
from bot.slack.outbound.asker import SlackAsker
from bot.turn.approval import TurnApprover
from bot.turn.model import QueuedTurn, Turn, TurnKind
from bot.turn.owner import Timing
from bot.turn.ports import (
    Agent,
    ChannelFor,
    ContextFor,
    Deadline,
    ModelFor,
    Responder,
    ToolsetFor,
    TurnEnded,
    WaitingNote,
)
from bot.turn.waiting_note import WaitingTeller
from bot.turn.worker.consumer import EXPIRY_EVERY_S, Worker, consumer_name, expiry_every
from bot.turn.worker.processor import FAILURE_BACKOFF_S, ThreadProcessor
from bot.turn.worker.stops import POLL_S, StopWatcher
from permissions.channel_scope import ChannelScope
from permissions.policy import Person
from tools.call_context import Requester, for_requester
from tools.mcp.oauth.account import Account
from tools.toolset import Toolset


def slack_channels(services: Services, slack: SlackSide) -> ChannelFor:
    """What a Slack turn's channel sets: the file's ``channels:`` entries and the values set
    in Slack, resolved, and the channel's notes (in a DM, the person's), one Redis round
    trip. Whether the channel is shared with another organisation only matters to the
    ``external`` entry: without one, Slack is never asked (the event's flag, or not
    shared)."""
    reader = channel_reader(services)
    ask = EXTERNAL in services.config.channels

    async def channel_for(turn: Turn) -> ChannelView:
        said = turn.shared
        external = await slack.shared.external(turn.channel, said) if ask else bool(said)
        return await reader.read(turn.channel, turn.user, external)

    return channel_for


def channel_reader(services: Services) -> ChannelReader:
    """The reader of channels' settings and notes, over the file's ``channels:`` section."""
    shared = services.state.shared
    return ChannelReader(services.config.channels, shared.channels, shared.memory)


def channel_tools(inner: Toolset, channel: ChannelView | None) -> Toolset:
    """``inner`` as the channel offers it: narrowed by its ``tools`` and ``mcp_servers``
    (unchanged where they narrow nothing)."""
    if channel is None:
        return inner
    settings = channel.settings
    narrows = settings.tool_filters or settings.server_filters
    return ChannelScope(inner, settings) if narrows else inner


def slack_toolsets(services: Services, slack: SlackSide) -> ToolsetFor:
    """A Slack turn's tools: what its channel offers (its ``tools`` and ``mcp_servers``)
    and its person's roles allow (both asked again at every call); a call that needs a
    person's approval parks the turn until someone who may decide clicks
    (bot/turn/approval.py); each tool run for the person, who is asked in the thread when
    an MCP server has a question. With MCP servers that sign each person in, the person's
    own tools of those servers are offered too, and a call of one waits for them to connect
    (bot/turn/sign_in.py) before anyone is asked to approve it. Where the channel's memory
    is on, ``remember`` beside them, outside the roles (memory is its switch). A schedule's
    run is offered no ``schedule`` tool (bot/schedules/run_tools.py)."""
    policy, registry, state, config = (
        services.policy,
        services.registry,
        services.state,
        services.config,
    )
    oauth = state.oauth
    personal = services.tools.mcp.personal if oauth is not None else {}

    async def person_tools(
        queued: QueuedTurn, deadline: Deadline, channel: ChannelView | None
    ) -> Toolset:
        turn = queued.turn
        person = Person(turn.team, turn.user, turn.channel, user_team=turn.author_team)
        remember = (
            remember_tool(
                state.shared.memory,
                turn.team,
                turn.channel,
                turn.user,
                queued.entry_id,
                config.slack.command,
            )
            if channel is not None and channel.settings.may_remember(person.external)
            else None
        )
        approver = TurnApprover(
            state.threads.approvals,
            state.shared.audit,
            queued,
            timeout_s=config.approval.timeout_s,
            quota=state.shared.approval_quota,
            max_open=config.approval.max_open_per_person,
        )
        asker = SlackAsker(TurnClient(slack.client, deadline), state.threads.elicitations, turn)
        requester = Requester(
            turn.team, turn.user, turn.channel, turn.thread_ts, asker, turn.author_team
        )
        if oauth is None or not personal:
            offered = channel_tools(registry, channel)
            return with_remember(
                for_requester(policy.guarded(offered, person, approver), requester), remember
            )
        # loaded only with a server that signs people in (they load the MCP SDK)
        from bot.turn.sign_in import TurnSignIn
        from tools.mcp.oauth.gate import PersonalToolset, SignInToolset

        connector = TurnSignIn(
            state.threads.approvals,
            state.shared.audit,
            queued,
            oauth,
            personal,
            person,
            timeout_s=config.approval.timeout_s,
            allow_external=config.oauth.allow_external,
        )
        own = channel_tools(
            PersonalToolset(registry, personal, Account(turn.team, turn.user)), channel
        )
        allowed = SignInToolset(policy.guarded(own, person, approver), connector, personal)
        return with_remember(for_requester(allowed, requester), remember)

    async def toolset_for(
        queued: QueuedTurn, deadline: Deadline, channel: ChannelView | None
    ) -> Toolset:
        offered = await person_tools(queued, deadline, channel)
        return WithoutScheduling(offered) if queued.turn.kind is TurnKind.SCHEDULED else offered

    return toolset_for


def slack_models(services: Services) -> ModelFor:
    """A Slack turn's model: within the spending limits of its person (their own, their
    roles', the workspace's) and of its channel (everyone in it together), each call
    reserved in all of them at once before it is made."""

    async def model_for(turn: Turn, channel: ChannelView | None) -> ChatModel:
        person = Person(turn.team, turn.user, turn.channel, user_team=turn.author_team)
        budget = channel.settings.budget.value if channel is not None else None
        return await services.budgets.guard_for(
            services.model, person, turn.thread_ts, channel_budget=budget
        )

    return model_for


def slack_contexts(services: Services, slack: SlackSide) -> ContextFor:
    """What a Slack turn's model is told besides the base system prompt: what the surface
    knows (bot/slack/inbox/context.py), then the channel's instructions and notes."""
    estimator = services.model.estimator

    async def context_for(turn: Turn, channel: ChannelView | None) -> str:
        surface = await slack.context(turn)
        own = (
            channel_context(channel, estimator, dm=turn.channel.startswith("D"))
            if channel is not None
            else ""
        )
        return "\n\n".join(part for part in (surface, own) if part)

    return context_for


def slack_agent(services: Services, slack: SlackSide) -> Agent:
    return Agent(
        model=services.model,
        settings=services.loop_settings,
        toolset_for=slack_toolsets(services, slack),
        history_budget=services.config.history.token_budget,
        estimator=services.model.estimator,
        context_for=slack_contexts(services, slack),
        message_for=slack.inbox,
        models=slack_models(services),
        channel_for=slack_channels(services, slack),
    )


def slack_worker(services: Services, slack: SlackSide) -> Worker:
    """The Slack worker; a scheduled run's outcome is kept on its schedule when it ends."""
    return build_worker(
        services.state,
        slack_agent(services, slack),
        slack.responder,
        services.config.queue,
        waiting_note=slack.waiting_note,
        expiry_every_s=expiry_every(services.config.approval.timeout_s),
        ended=run_outcomes(services.state.shared.schedules),
    )


def build_worker(
    state: State,
    agent: Agent,
    responder: Responder,
    queue: QueueConfig,
    *,
    name: str | None = None,
    timing: Timing | None = None,
    stop_poll_s: float = POLL_S,
    failure_backoff_s: float = FAILURE_BACKOFF_S,
    block_ms: int | None = None,
    waiting_note: WaitingNote | None = None,
    expiry_every_s: float = EXPIRY_EVERY_S,
    ended: TurnEnded | None = None,
) -> Worker:
    """A worker over ``state`` with the queue settings; ``timing`` overrides the delivery
    retry pace (tests make it quick); ``waiting_note``: how a thread is told that its later
    messages wait behind a turn waiting for an approval; ``expiry_every_s``: how often it looks
    for approval requests to expire (bot/turn/worker/consumer.py ``expiry_every``);
    ``ended``: told when a turn ended (delivered or dead-lettered)."""
    consumer = name or consumer_name()
    threads = state.threads
    waiting = (
        WaitingTeller(threads.approvals, threads.waiting_notes, waiting_note)
        if waiting_note is not None
        else None
    )
    processor = ThreadProcessor(
        state.turn_stores(),
        state.threads.locks,
        agent,
        responder,
        StopWatcher(state.threads.stops, poll_s=stop_poll_s),
        timing
        or Timing(max_attempts=queue.max_attempts, deliver_timeout_s=queue.deliver_timeout_s),
        consumer=consumer,
        failure_backoff_s=failure_backoff_s,
        waiting=waiting,
        ended=ended,
    )
    return Worker(
        state.threads.queue,
        processor,
        state.threads.notices,
        responder,
        concurrency=queue.concurrency,
        claim_idle_s=queue.claim_idle_s,
        shutdown_grace_s=queue.shutdown_grace_s,
        embedded=state.handle.embedded,
        name=consumer,
        **({"block_ms": block_ms} if block_ms is not None else {}),
        expire_overdue=partial(state.threads.approvals.expire_overdue, state.shared.audit),
        expiry_every_s=expiry_every_s,
    )
