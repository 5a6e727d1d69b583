"""The Slack side of a process, built once: the Web API client, who the bot is, what comes
in (the Bolt app, its listeners and the ingress) and what goes out (the responder, a
scheduled run's headline), the inbox that reads each message whole for the model, and what
schedules ask of people (their time zone, whether they left)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp

from bot.admin.commands import AdminCommands
from bot.admin.context import AdminStores, BeginSignIn
from bot.channels.config import EXTERNAL
from bot.config.errors import ConfigError
from bot.config.requirements import missing_message, missing_settings
from bot.process.services import Services
from bot.slack.client import GuardedWebClient, web_client
from bot.slack.directory import SlackDirectory
from bot.slack.identity import BotIdentity
from bot.slack.inbound.after_ack import AfterAck
from bot.slack.inbound.app import build_app
from bot.slack.inbound.ingress import Ingress
from bot.slack.inbound.message_events import MessageEvents
from bot.slack.inbound.storage_down import RefusalLog
from bot.slack.inbox.compose import SlackInbox
from bot.slack.inbox.context import SlackContext
from bot.slack.inbox.files import FileReader
from bot.slack.inbox.names import SlackNames
from bot.slack.inbox.shared_channels import SharedChannels
from bot.slack.outbound.responder import SlackResponder
from bot.slack.outbound.schedule_headline import SlackHeadlines
from bot.slack.outbound.waiting_note import SlackWaitingNote
from bot.slack.profiles import SlackProfiles
from bot.turn.store.tool_outputs import ToolOutputs
from permissions.approval import deciders

if TYPE_CHECKING:  # loaded only with a server that signs people in (they load the MCP SDK)
    from bot.oauth.flows import Naming
    from tools.mcp.oauth.account import Account
    from tools.mcp.oauth.pending import PendingAuthorization
    from tools.mcp.oauth.personal import PersonalServer


@dataclass
class SlackSide:
    client: GuardedWebClient  # its one aiohttp session closed by aclose()
    identity: BotIdentity
    app: AsyncApp
    ingress: Ingress
    messages: MessageEvents  # message events past Bolt, to the ingress
    later: AfterAck  # listeners' Slack work after their ack
    responder: SlackResponder
    inbox: SlackInbox  # the message whole, as the model reads it
    context: SlackContext  # what the model is told about the Slack around a turn
    waiting_note: SlackWaitingNote  # a thread's later messages wait behind an approval
    shared: SharedChannels  # whether a channel is shared with another organisation
    profiles: SlackProfiles  # people's time zones, and whether they left (schedules)
    headlines: SlackHeadlines  # a scheduled run's top-level message


def build_slack_side(services: Services, *, http: bool) -> SlackSide:
    """Everything Slack for this process; the variables ``run`` (``http``) or ``worker``
    needs and lacks are named in one :class:`ConfigError`."""
    env, config, state = services.environment, services.config, services.state
    missing = missing_settings(env, config, "run" if http else "worker")
    if missing or env.slack_bot_token is None:
        raise ConfigError(missing_message(missing))
    settings = config.slack
    client = web_client(
        env.slack_bot_token.get_secret_value(),
        env.slack_api_url,
        allow_broadcast=settings.allow_broadcast,
    )
    policy = services.policy
    identity = BotIdentity(client)
    # Roles from user groups and workspace admin status need Slack, and only count for
    # people users.info places in the bot's own workspace (auth.test).
    policy.resolver.directory = SlackDirectory(client, state.shared.cache, identity)
    shared = SharedChannels(client, state.shared.cache)
    profiles = SlackProfiles(client, state.shared.cache)
    # The `schedule` tool makes schedules in Redis, in the person's own time zone by default.
    services.tools.schedules.use(state.shared.schedules, profiles.timezone)
    inbox = SlackInbox(
        client,
        SlackNames(client, state.shared.cache),
        FileReader(client, text_chars=settings.file_text_chars),
        state.threads.asides,
        state.threads.history,
        identity.me,
        budget_tokens=config.history.token_budget,
        estimator=services.model.estimator,
        vision=config.llm.vision,
    )
    responder = SlackResponder(
        client,
        settings,
        identity,
        stops=state.threads.stops,
        model=config.llm.model,
        approvals=state.threads.approvals,
        decide=deciders(config.approval, config.roles),
        open_link=state.oauth.open_link if state.oauth is not None else None,
    )
    ingress = Ingress(
        state.threads.queue, state.threads.participation, settings, state.threads.asides
    )
    secret = (
        env.slack_signing_secret.get_secret_value() if http and env.slack_signing_secret else None
    )
    admin = AdminCommands(
        settings.command,
        policy,
        services.registry,
        config.roles,
        AdminStores(
            state.shared.switches,
            state.shared.grants,
            state.shared.audit,
            state.shared.usage,
            state.shared.feedback,
            services.budgets,
            state.shared.channels,
            state.shared.memory,
            partial(admin_external, shared, EXTERNAL in config.channels),
            state.shared.schedules,
            oauth=state.oauth,
            begin_sign_in=begin_sign_in(services.tools.mcp.personal),
        ),
        permalink=identity.permalink,
        personal=services.tools.mcp.personal,
        channels=config.channels,
        servers=list(config.mcp.servers),
    )
    if state.oauth is not None:
        state.oauth.sign_ins.describe = start_page_names(
            SlackNames(client, state.shared.cache), identity
        )
    later = AfterAck()
    refusals = RefusalLog()  # one warning a minute for every request Redis being away refused
    app = build_app(
        client,
        ingress,
        settings,
        signing_secret=secret,
        admin=admin,
        policy=policy,
        registry=services.registry,
        stops=state.threads.stops,
        pane=state.threads.pane,
        feedback=state.shared.feedback,
        later=later,
        signed=state.shared.signed,
        elicitations=state.threads.elicitations,
        approvals=state.threads.approvals,
        audit=state.shared.audit,
        approval=config.approval,
        refusals=refusals,
        outputs=ToolOutputs(state.threads.history, state.threads.records),
    )
    return SlackSide(
        client,
        identity,
        app,
        ingress,
        MessageEvents(ingress, identity, refusals),
        later,
        responder,
        inbox,
        SlackContext(state.threads.pane),
        SlackWaitingNote(client, identity, deciders(config.approval, config.roles)),
        shared,
        profiles,
        SlackHeadlines(client, identity.me),
    )


def start_page_names(
    names: SlackNames, identity: BotIdentity
) -> Callable[[Account], Awaitable[Naming]]:
    """How the sign-in's start page names the person (their display name) and the workspace
    (the bot's, from auth.test; another's by its ID)."""
    from bot.oauth.flows import Naming

    async def describe(account: Account) -> Naming:
        found = await names.users([account.user])
        mine = await identity.load()
        workspace = str(mine.get("team") or "") if mine.get("team_id") == account.team else ""
        return Naming(found.get(account.user) or account.user, workspace or account.team)

    return describe


def begin_sign_in(personal: Mapping[str, PersonalServer]) -> BeginSignIn | None:
    """What `/agent connect <server>` starts a sign-in with: the server's authorization
    request for the person, built by the SDK (None: no server signs people in)."""
    if not personal:
        return None

    async def begin(account: Account, server: str) -> PendingAuthorization | None:
        return await personal[server].begin(account)

    return begin


async def admin_external(shared: SharedChannels, ask: bool, channel: str) -> bool:
    """Whether a channel is shared with another organisation, for ``/agent channel``: asked
    of Slack (cached) only when the file has an ``external`` entry, the one setting that
    depends on it (as a turn does, bot/process/worker.py ``slack_channels``)."""
    return await shared.external(channel, None) if ask else False
