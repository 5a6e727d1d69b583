"""The Bolt app: a signed request accepted once (``replays.py``), its listeners, grouped by
kind, and what a failing listener answers."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.admin.commands import AdminCommands
from bot.config.schema import SlackConfig
from bot.slack.inbound.after_ack import AfterAck
from bot.slack.inbound.ingress import Ingress
from bot.slack.inbound.listeners import (
    actions,
    agent,
    assistant,
    commands,
    elicitation,
    home,
    messages,
)
from bot.slack.inbound.listeners import approvals as approval_clicks
from bot.slack.inbound.listeners import feedback as feedback_clicks
from bot.slack.inbound.listeners import sign_in as sign_in_clicks
from bot.slack.inbound.listeners import tool_output as output_clicks
from bot.slack.inbound.replays import AcceptedOnce
from bot.slack.inbound.storage_down import RefusalLog, is_storage_down, storage_down_response
from bot.state.audit import AuditLog
from bot.state.feedback import FeedbackLog
from bot.state.signed_requests import SignedRequests
from bot.turn.store.agent_pane import AgentPaneThreads
from bot.turn.store.approvals import Approvals
from bot.turn.store.elicitations import Elicitations
from bot.turn.store.stops import StopRequests
from bot.turn.store.tool_outputs import ToolOutputs
from permissions.approval import ApprovalConfig
from permissions.policy import Policy
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)


class _TokenFromEnvironmentNote(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN itself and then warns that our client's token wins; it
    is the same token, so the warning is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


logging.getLogger("slack_bolt.AsyncApp").addFilter(_TokenFromEnvironmentNote())


def build_app(
    client: AsyncWebClient,
    ingress: Ingress,
    settings: SlackConfig,
    *,
    signing_secret: str | None,
    admin: AdminCommands,
    policy: Policy,
    registry: ToolRegistry,
    stops: StopRequests,
    pane: AgentPaneThreads,
    feedback: FeedbackLog,
    later: AfterAck,
    signed: SignedRequests,
    elicitations: Elicitations | None = None,
    approvals: Approvals | None = None,
    audit: AuditLog | None = None,
    approval: ApprovalConfig | None = None,
    refusals: RefusalLog | None = None,
    outputs: ToolOutputs | None = None,
) -> AsyncApp:
    refused = refusals or RefusalLog()
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        # Run the listener (which only enqueues) before answering Slack, so a failed enqueue
        # becomes a 503 and Slack delivers again, instead of an ack for a lost message.
        process_before_response=True,
        request_verification_enabled=signing_secret is not None,
    )
    # Before every listener: a replayed command or click runs nothing (401), and one that
    # cannot be checked for want of Redis gets the storage-down answer (on_error, below).
    app.middleware(AcceptedOnce(signed))
    messages.register(app, ingress)
    assistant.register(app, settings, pane, later)
    commands.register(app, settings.command, admin, later)
    home.register(
        app,
        settings.command,
        policy,
        registry,
        later,
        admin.channel.home_rows,
        admin.schedules.home_rows,
    )
    actions.register(app, stops, policy, later)
    agent.register(app, stops)
    feedback_clicks.register(app, feedback)
    if elicitations is not None:
        elicitation.register(app, elicitations)
    if outputs is not None and audit is not None:
        output_clicks.register(app, outputs, policy, audit, later, registry)
    if approvals is not None and audit is not None:
        approval_clicks.register(app, approvals, audit, policy, approval or ApprovalConfig(), later)
        sign_in_clicks.register(app, approvals, audit, settings.command, later)

    @app.error
    async def on_error(
        error: Exception, body: dict[str, Any], respond: AsyncRespond | None
    ) -> BoltResponse | None:
        if is_storage_down(error):
            # Events: 503 / no ack, so Slack redelivers. Commands and clicks: plain words.
            return await storage_down_response(error, body, respond, refused)
        log.exception("handling a Slack request failed", exc_info=error)
        return None

    return app
