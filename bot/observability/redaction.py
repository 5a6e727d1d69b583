"""Secrets kept out of everything the bot writes: log lines (bot/observability/logs.py), what
``check`` and ``tools`` print, and the spans it exports (bot/observability/span_export.py).

:data:`REDACTOR` holds every configured secret (bot/observability/secrets.py registers them
as soon as they are known) and replaces each with ``[redacted]``, as written and in the
forms it takes inside JSON and URLs. Whatever the configuration says, the credentials of a
URL (``scheme://user:password@``), the values of query parameters named like secrets
(``?api_key=``, ``&token=``, ``sig=``, ...) or carrying an OAuth secret (``&code=``,
``&code_verifier=``, ``&state=``, ``&client_assertion=``), the values of JSON members that hold
OAuth tokens and secrets (``"access_token": "..."``, as a token response reads) and the
credentials after ``Bearer`` or ``Basic`` are replaced too: the forms a person's token or a
sign-in's code takes, which no configuration names.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterable
from typing import IO
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6  # shorter values (test placeholders, "1") would blot out ordinary words

# A URL's user information, up to the "@" before its host: "https://user:pw@host".
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/\s@?#\"'<>]+@")
# A query parameter whose name says it holds a secret, or that carries an OAuth secret
# (exactly ``code``, ``code_verifier``, ``state``: a word "state" in text is left alone),
# and its value.
_SECRET_PARAMETER = re.compile(
    r"(?i)(?<=[?&;])("
    r"[\w.-]*(?:key|token|secret|pass|pwd|auth|sig|credential|session|assertion)[\w.-]*"
    r"|code|code_verifier|state"
    r")=[^&;\s#\"'<>]+"
)
# A JSON member holding an OAuth token or secret (a token response, a registration), and its
# string value.
_SECRET_FIELD = re.compile(
    r'"(access_token|refresh_token|id_token|code|code_verifier|client_secret)"'
    r'\s*:\s*"(?:[^"\\]|\\.)*"'
)
# An HTTP authorization's credentials: ``Bearer <token>``, ``Basic <base64>``.
_CREDENTIALS = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=_-]{8,})")
_CREDENTIAL_MARKS = re.compile(r"[0-9._~+/=_-]|[a-z][A-Z]")
SURE_CREDENTIAL_CHARS = 24  # a word this long after "Bearer" is a credential whatever it is
# A URL's whole query.
_URL_QUERY = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#\"'<>]+)\?[^\s#\"'<>]*")


def forms(secret: str) -> set[str]:
    """``secret`` as written, and as it reads inside a JSON string (either escaping), a
    Python repr and a URL."""
    return {
        secret,
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret),
    }


class Redactor:
    """The secrets to keep out of every output, shared by every writer."""

    def __init__(self) -> None:
        self._secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def add(self, values: Iterable[str | None]) -> None:
        with self._lock:
            known = set(self._secrets)
            for value in values:
                if value and len(value) >= MIN_SECRET_CHARS:
                    known.update(forms(value))
            # Longest first, so a secret containing another is replaced whole.
            self._secrets = tuple(sorted(known, key=len, reverse=True))

    def redact(self, text: str) -> str:
        """``text`` with every known secret, every URL's credentials and every secret-named
        query parameter's value replaced."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if "://" in text:
            text = _URL_CREDENTIALS.sub(REDACTED + "@", text)
        if "=" in text:
            text = _SECRET_PARAMETER.sub(r"\1=" + REDACTED, text)
        if '"' in text:
            text = _SECRET_FIELD.sub(rf'"\1": "{REDACTED}"', text)
        lowered = text.lower()
        if "bearer" in lowered or "basic" in lowered:
            text = _CREDENTIALS.sub(_credentials, text)
        return text


def _credentials(match: re.Match[str]) -> str:
    """A ``Bearer``/``Basic`` match with its credentials replaced, when they look like
    credentials (a digit or a token's punctuation, a lower-then-upper letter, or a length no
    word has): "Basic authentication" stays as written."""
    scheme, space, value = match.groups()
    if len(value) >= SURE_CREDENTIAL_CHARS or _CREDENTIAL_MARKS.search(value):
        return f"{scheme}{space}{REDACTED}"
    return match.group(0)


REDACTOR = Redactor()


def without_queries(text: str) -> str:
    """``text`` with the query of every URL in it replaced (what another library logs)."""
    return _URL_QUERY.sub(r"\1?" + REDACTED, text) if "://" in text else text


def print_redacted(text: str, file: IO[str] | None = None) -> None:
    """Print ``text`` with every secret replaced (``check``, ``tools``, error messages)."""
    print(REDACTOR.redact(text), file=file or sys.stdout)
