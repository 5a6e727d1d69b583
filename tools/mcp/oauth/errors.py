"""What the model reads when a call needed its person's sign-in to an MCP server and could
not run: our own fixed sentences, each naming the tool, the person and the server, never
anything the OAuth layer said (an authorization server's error body, the SDK's exception
text, a token, a code or a state).

- :class:`NotConnected`: the person did not connect (the sign-in expired, they chose not to,
  it keeps failing, or people from other workspaces may not connect here).
- :class:`SignInFailed`: the sign-in went wrong; the person can try again.
- :class:`SignInUnavailable`: the server's sign-in service cannot be reached now (the
  person's connection is kept).

``person`` is how the surface names the person (``<@U…>`` in Slack); ``within`` is the
request's time in words ("15 minutes").
"""

from __future__ import annotations

from tools.errors import ToolError


class NotConnected(ToolError):
    """The call did not run: its person is not connected to the server it needs."""

    kind = "NotConnected"

    def __init__(self, tool_name: str, server: str, message: str) -> None:
        self.tool_name = tool_name
        self.server = server
        super().__init__(message)

    @classmethod
    def expired(cls, tool_name: str, person: str, server: str, within: str) -> NotConnected:
        return cls(
            tool_name,
            server,
            f"{tool_name} did not run: {person} did not connect {server} within {within}.",
        )

    @classmethod
    def declined(cls, tool_name: str, person: str, server: str) -> NotConnected:
        return cls(
            tool_name, server, f"{tool_name} did not run: {person} chose not to connect {server}."
        )

    @classmethod
    def keeps_failing(cls, tool_name: str, server: str) -> NotConnected:
        return cls(
            tool_name, server, f"{tool_name} did not run: the sign-in to {server} keeps failing."
        )

    @classmethod
    def outsider(cls, tool_name: str, server: str) -> NotConnected:
        return cls(tool_name, server, f"People from other workspaces cannot connect {server} here.")


class SignInFailed(ToolError):
    """The call did not run: the person's sign-in failed (they can try again)."""

    kind = "SignInFailed"

    def __init__(self, tool_name: str, person: str, server: str) -> None:
        self.tool_name = tool_name
        self.server = server
        super().__init__(
            f"{tool_name} did not run: the sign-in to {server} failed; {person} can try again."
        )


class SignInUnavailable(ToolError):
    """The call did not run: the server's sign-in service is unavailable right now."""

    kind = "SignInUnavailable"

    def __init__(self, tool_name: str, server: str) -> None:
        self.tool_name = tool_name
        self.server = server
        super().__init__(
            f"{tool_name} did not run: {server}'s sign-in service is unavailable right now."
        )
