"""The terminal console: the same loop as Slack, driven from a terminal or a script."""

from bot.console.chat import ChatOptions, run_chat

__all__ = ["ChatOptions", "run_chat"]
