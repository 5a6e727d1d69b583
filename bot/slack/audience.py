"""Who reads what the bot writes in a conversation: decided from its channel id alone.

A direct message with the bot (channel ids starting with ``D``; the agent pane's threads are
in it too) is read by the person alone. Anything else is read by several people: a channel
(public or private: ``C``), a group DM or an old private channel (``G``), and in a Slack
Connect channel guests of other workspaces as well. What only the person who asked may see
(a tool's output) is shown only where they alone read.
"""

from __future__ import annotations


def read_by_requester_alone(channel: str) -> bool:
    """Whether only the person who asked reads what the bot writes in ``channel``."""
    return channel.startswith("D")
