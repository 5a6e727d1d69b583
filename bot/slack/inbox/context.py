"""What the model is told about the Slack around a turn: in a channel, that messages start
with who wrote them; in the agent pane, the channel the person is looking at (Slack's thread
context); in a schedule's run, that it is one, whose ask its message is (the prompt alone,
without its author) and that nobody watches it."""

from __future__ import annotations

from bot.turn.model import Turn, TurnKind
from bot.turn.store.agent_pane import AgentPaneThreads

MENTIONS = "To mention someone, write <@U…> exactly; do not start your answer with your own name."
SPEAKERS = (
    "This is a Slack channel conversation: each person's message starts with who wrote it, "
    f"as <@U…> (their name). {MENTIONS}"
)
# A run's message is its prompt alone (bot/slack/inbox/compose.py: the turn carries no Slack
# message), so its context names whose ask it is instead.
SCHEDULED = (
    "This turn is a scheduled run: the message below is a scheduled ask made by <@{owner}> "
    "earlier, and it runs now as theirs, in their name. They are not watching as it runs, "
    "so answer it fully without asking them anything first; your answer is posted under the "
    "run's headline, where people may reply."
)
SCHEDULED_IN_CHANNEL = f"This is a Slack channel: people in it may read the answer. {MENTIONS}"


class SlackContext:
    def __init__(self, pane: AgentPaneThreads) -> None:
        self.pane = pane

    async def __call__(self, turn: Turn) -> str:
        if turn.kind is TurnKind.SCHEDULED:
            said = SCHEDULED.format(owner=turn.user)
            return said if turn.channel.startswith("D") else f"{said}\n\n{SCHEDULED_IN_CHANNEL}"
        if turn.kind.in_channel:
            return SPEAKERS
        if turn.kind is not TurnKind.ASSISTANT:
            return ""
        viewed = await self.pane.context(turn.thread_key)
        channel = viewed.get("channel_id")
        if not channel:
            return ""
        return (
            f"While asking, the person is looking at the Slack channel <#{channel}> "
            "(mention it as written here if it matters)."
        )
