"""LLM failures, with the plain words a person is shown for each (the SDK's exceptions are
mapped to them in sdk_errors.py; this module loads no SDK)."""

from __future__ import annotations

_PLAIN = {
    "unreachable": "The model service is not answering right now. Please try again in a minute.",
    "timeout": "The model service took too long to answer. Please try again in a minute.",
    "rate_limited": "The model service is busy right now. Please try again in a minute.",
    "auth": "The bot could not sign in to the model service. Please tell whoever runs this bot.",
    "not_found": (
        "The configured model was not found at the model service. "
        "Please tell whoever runs this bot."
    ),
    "bad_request": (
        "The model service refused this request. Try rephrasing, or start a new thread "
        "if this one is very long."
    ),
    "server_error": "The model service had an error. Please try again in a minute.",
    "invalid_response": (
        "The model service sent an answer the bot could not read. Please try again."
    ),
}


class LLMError(Exception):
    """A model call failed after the SDK's own retries.

    ``kind`` is a short code, ``user_message`` the sentence shown to people, and the
    exception text (``str(self)``) the detail for the log only.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind

    @property
    def user_message(self) -> str:
        return _PLAIN.get(self.kind, _PLAIN["server_error"])
