"""Which Slack errors mean "this will not work until a person changes something" (pure)."""

from __future__ import annotations

# Errors of auth.test and apps.connections.open that no retry fixes.
REFUSED = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_allowed_token_type",
        "missing_scope",
        "no_permission",
        "ekm_access_denied",
        "team_access_not_granted",
        "link_disabled",
    }
)

# `disconnect` reasons after which a new connection is opened at once.
REFRESH_REASONS = frozenset({"warning", "refresh_requested"})
# `disconnect` reasons that mean Slack will not take the app's connections for now.
REFUSED_REASONS = frozenset({"link_disabled"})
# The app has more connections than Slack allows (10, across every replica).
TOO_MANY = "too_many_websockets"


def is_refusal(error: str) -> bool:
    return error in REFUSED
