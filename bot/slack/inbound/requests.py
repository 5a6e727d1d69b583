"""From an HTTP request to a request Bolt can dispatch: the Slack signature is checked on the
raw bytes first, and only a signed body is parsed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier


class MalformedRequest(Exception):
    """A signed body that is not a Slack payload Bolt can read."""


def signed_by_slack(verifier: SignatureVerifier, raw: bytes, headers: Mapping[str, str]) -> bool:
    """Whether X-Slack-Signature is the HMAC of X-Slack-Request-Timestamp and ``raw`` and
    the timestamp is within five minutes of now. ``headers``: names in lower case, or
    looked up without case (aiohttp's)."""
    try:
        return verifier.is_valid(
            raw, headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature")
        )
    except ValueError:  # a timestamp that is not a number; a body that is not UTF-8
        return False


def bolt_request(raw: bytes, headers: Mapping[str, str], query: str) -> AsyncBoltRequest:
    """Bolt's request for a verified body, or :class:`MalformedRequest` when Bolt could not
    read it: invalid JSON, a form whose ``payload`` is not JSON, a payload that is not an
    object, or one whose parts Bolt routes on have the wrong shape."""
    try:
        parsed = AsyncBoltRequest(body=raw.decode("utf-8"), query=query, headers=dict(headers))
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError among them
        raise MalformedRequest(type(exc).__name__) from None
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        # Bolt reads team, user and channel ids out of the payload as it builds the
        # request; a list, a string or a number where an object belongs breaks that.
        raise MalformedRequest(f"unexpected payload shape ({type(exc).__name__})") from None
    problems = shape_problems(parsed.body)
    if problems:
        raise MalformedRequest(f"unexpected payload shape ({', '.join(problems)})")
    return parsed


def shape_problems(body: Any) -> list[str]:
    """The parts of ``body`` that Bolt's routing indexes into but could not: the payload
    itself, an event callback's ``event``, an interaction's ``actions`` and ``view``."""
    if not isinstance(body, dict):
        return ["not an object"]
    problems = []
    event = body.get("event", {})
    if not isinstance(event, dict) or not isinstance(event.get("type", ""), str):
        problems.append("event")
    if not _readable_actions(body):
        problems.append("actions")
    if not isinstance(body.get("view", {}), dict):
        problems.append("view")
    return problems


def _readable_actions(body: dict[str, Any]) -> bool:
    actions = body.get("actions", [])
    if not isinstance(actions, list) or not all(isinstance(a, dict) for a in actions):
        return False
    if body.get("type") == "block_actions":  # Bolt matches on the first action's id
        return bool(actions) and isinstance(actions[0].get("action_id"), str)
    return True
