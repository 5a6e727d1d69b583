"""manifest.yml asks for exactly the scopes the code uses, subscribes to every event it
listens to, and declares the agent view."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]

# What each Web API method the bot calls needs (Slack's method reference).
METHOD_SCOPES: dict[str, set[str]] = {
    "chat_postMessage": {"chat:write"},
    "chat_update": {"chat:write"},
    "chat_delete": {"chat:write"},
    "chat_postEphemeral": {"chat:write"},  # a sign-in link for one person
    "chat_startStream": {"chat:write"},
    "chat_appendStream": {"chat:write"},
    "chat_stopStream": {"chat:write"},
    "agents_sessions_setStatus": {"chat:write"},
    "assistant_threads_setStatus": {"assistant:write"},
    "assistant_threads_setTitle": {"assistant:write"},
    "assistant_threads_setSuggestedPrompts": {"assistant:write"},
    "conversations_replies": {
        "channels:history",
        "groups:history",
        "im:history",
        "mpim:history",
    },
    # a schedule's run looks for its headline, posted before a crash (its tag)
    "conversations_history": {
        "channels:history",
        "groups:history",
        "im:history",
        "mpim:history",
    },
    "conversations_info": {"channels:read", "groups:read", "im:read", "mpim:read"},
    # whether a schedule's owner is still in its private channel (groups:read for those)
    "conversations_members": {"channels:read", "groups:read", "im:read", "mpim:read"},
    "files_info": {"files:read"},  # and reading a file's url_private with the bot token
    "users_info": {"users:read"},
    "usergroups_users_list": {"usergroups:read"},
    "views_publish": set(),
    "views_open": set(),  # a modal: the approval card's "Show all", a tool's output
    "views_update": set(),  # the tool output's modal, filled in once looked up
    "auth_test": set(),
}
# What each subscribed event needs.
EVENT_SCOPES: dict[str, set[str]] = {
    "app_mention": {"app_mentions:read"},
    "message.channels": {"channels:history"},
    "message.groups": {"groups:history"},
    "message.im": {"im:history"},
    "message.mpim": {"mpim:history"},
    "assistant_thread_started": {"assistant:write"},
    "assistant_thread_context_changed": {"assistant:write"},
    "agent_session_stopped": {"assistant:write"},
    "app_home_opened": set(),
}


def source() -> str:
    return "\n".join(path.read_text() for path in (ROOT / "bot").rglob("*.py"))


def test_the_manifest_asks_for_exactly_the_scopes_the_code_uses() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    code = source()
    called = set(
        re.findall(
            r"client\.((?:chat|assistant_threads|agents_sessions|"
            r"conversations|users|usergroups|views|auth|files)_\w+)",
            code,
        )
    )
    assert called <= set(METHOD_SCOPES), called - set(METHOD_SCOPES)
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    needed = {"commands"}  # the slash command
    for method in called:
        needed |= METHOD_SCOPES[method]
    for event in events:
        needed |= EVENT_SCOPES[event]
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == needed


def test_every_event_the_code_listens_to_is_subscribed() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    listened = set(re.findall(r'app\.event\("(\w+)"\)', source()))
    subscribed = {event.split(".")[0] for event in events}
    assert listened <= subscribed, listened - subscribed
    assert "agent_session_stopped" in events


def test_the_agent_view_is_declared() -> None:
    features = yaml.safe_load((ROOT / "manifest.yml").read_text())["features"]
    assert "assistant_view" not in features
    assert features["agent_view"]["agent_description"]
    assert 1 <= len(features["agent_view"]["suggested_prompts"]) <= 4
