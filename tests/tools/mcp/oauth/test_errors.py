"""What the model reads when a call needed its person's sign-in and could not run: the
plan's fixed sentences with the error kinds NotConnected, SignInFailed and SignInUnavailable,
as the agent loop hands them to the model."""

from __future__ import annotations

import json

import pytest

from bot.agent.execution import ExecutionSettings, execute_call
from bot.llm.response import ToolCall
from tools import StaticToolset, ToolError, tool
from tools.mcp.oauth.errors import NotConnected, SignInFailed, SignInUnavailable

ALICE = "<@U0ALICE>"


@pytest.mark.parametrize(
    ("error", "kind", "message"),
    [
        (
            NotConnected.expired("gh_push", ALICE, "GitHub", "15 minutes"),
            "NotConnected",
            "gh_push did not run: <@U0ALICE> did not connect GitHub within 15 minutes.",
        ),
        (
            NotConnected.declined("gh_push", ALICE, "GitHub"),
            "NotConnected",
            "gh_push did not run: <@U0ALICE> chose not to connect GitHub.",
        ),
        (
            NotConnected.keeps_failing("gh_push", "GitHub"),
            "NotConnected",
            "gh_push did not run: the sign-in to GitHub keeps failing.",
        ),
        (
            NotConnected.outsider("gh_push", "GitHub"),
            "NotConnected",
            "People from other workspaces cannot connect GitHub here.",
        ),
        (
            SignInFailed("gh_push", ALICE, "GitHub"),
            "SignInFailed",
            "gh_push did not run: the sign-in to GitHub failed; <@U0ALICE> can try again.",
        ),
        (
            SignInUnavailable("gh_push", "GitHub"),
            "SignInUnavailable",
            "gh_push did not run: GitHub's sign-in service is unavailable right now.",
        ),
    ],
)
async def test_the_model_reads_the_plans_sentence_and_kind(
    error: ToolError, kind: str, message: str
) -> None:
    assert isinstance(error, ToolError) and (error.kind, str(error)) == (kind, message)

    @tool
    def gh_push(branch: str) -> str:
        """Push a branch."""
        raise error

    execution = await execute_call(
        ToolCall("c1", "gh_push", '{"branch": "main"}'),
        StaticToolset([gh_push]),
        ExecutionSettings(),
        1,
    )
    assert json.loads(execution.output) == {"error": kind, "message": message}
