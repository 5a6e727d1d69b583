"""Sealing what a connection keeps in Redis: AES-GCM with the bot's secret key.

The key is ``SLACK_AGENT_SECRET_KEY``: 32 random bytes, in base64 (standard or URL-safe,
padded or not). A sealed blob reads ``v1.<kid>.<nonce and ciphertext, base64url>``: ``kid``
names the key (8 hex characters of its SHA-256), so a blob sealed with a key this process
does not hold is told apart from one that was tampered with. ``SLACK_AGENT_SECRET_KEY_PREVIOUS``
(optional) only opens: every write seals with the current key, so a key is rotated without
anyone connecting again.

Each blob is bound to its logical record by the associated data (:func:`token_aad`,
:func:`client_aad`, :func:`flow_aad`, :func:`link_aad`): whose token, for which server and
issuer; which server's registration for which redirect; which sign-in under way; whose start
link for which server. A blob copied onto another person's record does not open. The Redis key
text is not part of it, so a change of ``redis.key_prefix`` leaves every record readable.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from typing import Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from bot.config.environment import Environment
from bot.config.errors import ConfigError

KEY_VARIABLE = "SLACK_AGENT_SECRET_KEY"
PREVIOUS_KEY_VARIABLE = "SLACK_AGENT_SECRET_KEY_PREVIOUS"
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
VERSION = "v1"
_AAD_PREFIX = b"slack-agent/oauth/v1\0"

Reason = Literal["other key", "tampered", "bad format"]


class Unreadable(Exception):
    """A sealed blob that does not open: sealed with a key this process does not hold
    (``other key``), changed or moved to another record (``tampered``), or not a blob this
    version writes (``bad format``). The message is the reason alone, never the blob."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason)
        self.reason: Reason = reason


def key_id(key: bytes) -> str:
    """The name of a key in sealed blobs: 8 hex characters of its SHA-256."""
    return hashlib.sha256(key).hexdigest()[:8]


def parse_key(value: str | None, variable: str = KEY_VARIABLE) -> bytes:
    """The 32 bytes ``value`` encodes (base64, standard or URL-safe, padding optional);
    a :class:`ConfigError` naming ``variable`` and what is wrong otherwise (never the value)."""
    text = (value or "").strip()
    if not text:
        raise ConfigError(f"{variable} is not set: it must be 32 random bytes in base64")
    standard = text.replace("-", "+").replace("_", "/")
    standard += "=" * (-len(standard) % 4)
    try:
        key = base64.b64decode(standard, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(
            f"{variable} is not base64: it must be 32 random bytes in base64"
        ) from None
    if len(key) != KEY_BYTES:
        raise ConfigError(f"{variable} decodes to {len(key)} bytes, needs {KEY_BYTES}")
    return key


class Sealer:
    """Seals with the current key; opens with the current or the previous one."""

    __slots__ = ("_current", "_keys", "kid")

    def __init__(self, current: bytes, previous: bytes | None = None) -> None:
        for key in (current, previous):
            if key is not None and len(key) != KEY_BYTES:
                raise ValueError(f"an AES-256 key is {KEY_BYTES} bytes, not {len(key)}")
        self.kid = key_id(current)
        self._current = AESGCM(current)
        self._keys: dict[str, AESGCM] = {self.kid: self._current}
        if previous is not None:
            self._keys.setdefault(key_id(previous), AESGCM(previous))

    @classmethod
    def from_values(cls, current: str | None, previous: str | None = None) -> Sealer:
        """From the variables' values (``previous``: none, or empty, when there is none)."""
        old = parse_key(previous, PREVIOUS_KEY_VARIABLE) if (previous or "").strip() else None
        return cls(parse_key(current, KEY_VARIABLE), old)

    @property
    def kids(self) -> tuple[str, ...]:
        """The keys this sealer opens with, the current first."""
        return tuple(self._keys)

    def __repr__(self) -> str:
        return f"Sealer(kid={self.kid!r}, opens={list(self._keys)!r})"

    def seal(self, plain: bytes, aad: bytes) -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._current.encrypt(nonce, plain, aad)
        body = base64.urlsafe_b64encode(nonce + sealed).rstrip(b"=").decode()
        return f"{VERSION}.{self.kid}.{body}"

    def open(self, sealed: str, aad: bytes) -> bytes:
        """The plain bytes of ``sealed``; :class:`Unreadable` when they cannot be had."""
        version, _, rest = sealed.partition(".")
        kid, _, body = rest.partition(".")
        if version != VERSION or not kid or not body:
            raise Unreadable("bad format")
        aesgcm = self._keys.get(kid)
        if aesgcm is None:
            raise Unreadable("other key")
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            raise Unreadable("bad format") from None
        if len(raw) < NONCE_BYTES + TAG_BYTES:
            raise Unreadable("bad format")
        try:
            return aesgcm.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], aad)
        except InvalidTag:
            raise Unreadable("tampered") from None


def sealer_from(environment: Environment) -> Sealer:
    """The sealer of ``SLACK_AGENT_SECRET_KEY`` (and ``..._PREVIOUS``); a ConfigError naming
    the variable when one is missing or not base64 of 32 bytes."""
    current = environment.slack_agent_secret_key
    previous = environment.slack_agent_secret_key_previous
    return Sealer.from_values(
        current.get_secret_value() if current is not None else None,
        previous.get_secret_value() if previous is not None else None,
    )


def _aad(kind: str, *parts: str) -> bytes:
    encoded = [part.encode() for part in (kind, *parts)]
    if any(b"\0" in part for part in encoded):
        raise ValueError("a record's name may not contain NUL")
    return _AAD_PREFIX + b"\0".join(encoded)


def token_aad(team: str, user: str, server: str, issuer: str) -> bytes:
    """What a person's token blob is bound to: whose, for which server, from which issuer."""
    return _aad("token", team, user, server, issuer)


def client_aad(server: str, redirect_uri: str) -> bytes:
    """What a server's client registration blob is bound to: the server and the redirect."""
    return _aad("client", server, redirect_uri)


def flow_aad(state_digest: str) -> bytes:
    """What a sign-in under way is bound to: the SHA-256 of its state (hex)."""
    return _aad("flow", state_digest)


def link_aad(team: str, user: str, server: str) -> bytes:
    """What a sign-in's start link (kept on its request) is bound to: whose, for which
    server."""
    return _aad("link", team, user, server)
