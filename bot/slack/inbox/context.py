"""What the model is told about the Slack around a turn: in a channel, that messages start
with who wrote them; in the agent pane, the channel the person is looking at (Slack's thread
context)."""

from __future__ import annotations

from bot.turn.model import Turn, TurnKind
from bot.turn.store.agent_pane import AgentPaneThreads

SPEAKERS = (
    "This is a Slack channel conversation: each person's message starts with who wrote it, "
    "as <@U…> (their name). To mention someone, write <@U…> exactly; do not start your answer "
    "with your own name."
)


class SlackContext:
    def __init__(self, pane: AgentPaneThreads) -> None:
        self.pane = pane

    async def __call__(self, turn: Turn) -> str:
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
