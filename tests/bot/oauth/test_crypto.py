"""Sealing with the bot's secret key: a blob opens only on its own record, with a key the
process holds, unchanged; the previous key opens and the current one seals; a bad key stops
start-up naming its variable."""

from __future__ import annotations

import base64
import os

import pytest

from bot.config.errors import ConfigError
from bot.oauth.crypto import Sealer, Unreadable, client_aad, key_id, parse_key, token_aad

KEY = bytes(range(32))
OLD = bytes(range(100, 132))
TOKEN = b'{"access_token": "at-secret-1", "refresh_token": "rt-secret-2"}'
ALICE = token_aad("T1", "U1", "files", "https://as.example.com")


def test_a_sealed_blob_opens_on_its_record_and_shows_no_plain_text() -> None:
    sealer = Sealer(KEY)
    sealed = sealer.seal(TOKEN, ALICE)
    version, kid, body = sealed.split(".")
    assert (version, kid) == ("v1", key_id(KEY)) and len(kid) == 8
    assert b"secret" not in base64.urlsafe_b64decode(body + "==")
    assert "secret" not in sealed
    assert sealer.open(sealed, ALICE) == TOKEN
    assert sealer.seal(TOKEN, ALICE) != sealed  # a fresh nonce each time


@pytest.mark.parametrize(
    "elsewhere",
    [
        token_aad("T1", "U2", "files", "https://as.example.com"),  # another person
        token_aad("T2", "U1", "files", "https://as.example.com"),  # another workspace
        token_aad("T1", "U1", "mail", "https://as.example.com"),  # another server
        token_aad("T1", "U1", "files", "https://evil.example.com"),  # another issuer
        client_aad("files", "https://as.example.com"),  # another kind of record
    ],
)
def test_a_blob_moved_to_another_record_does_not_open(elsewhere: bytes) -> None:
    sealer = Sealer(KEY)
    with pytest.raises(Unreadable) as caught:
        sealer.open(sealer.seal(TOKEN, ALICE), elsewhere)
    assert caught.value.reason == "tampered"


def test_the_record_names_are_kept_apart() -> None:
    assert token_aad("T1", "U1", "a", "b") != token_aad("T1", "U1a", "", "b")
    assert client_aad("files", "https://bot/cb") != client_aad("files", "https://bot/cb2")
    with pytest.raises(ValueError, match="NUL"):
        token_aad("T1", "U1\0x", "a", "b")


def test_one_bit_flipped_anywhere_does_not_open() -> None:
    sealer = Sealer(KEY)
    sealed = sealer.seal(TOKEN, ALICE)
    prefix, body = sealed.rsplit(".", 1)
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    for index in (0, 11, 12, len(raw) // 2, len(raw) - 1):  # nonce, ciphertext, tag
        flipped = bytearray(raw)
        flipped[index] ^= 0x01
        text = base64.urlsafe_b64encode(bytes(flipped)).rstrip(b"=").decode()
        with pytest.raises(Unreadable) as caught:
            sealer.open(f"{prefix}.{text}", ALICE)
        assert caught.value.reason == "tampered"


@pytest.mark.parametrize(
    "broken", ["", "v1", "v2.abcdef01.AAAA", "v1..AAAA", "v1.{kid}.", "v1.{kid}.AAAA", "v1.{kid}.A"]
)
def test_what_is_not_a_blob_is_said_so(broken: str) -> None:
    sealer = Sealer(KEY)
    with pytest.raises(Unreadable) as caught:
        sealer.open(broken.format(kid=sealer.kid), ALICE)
    assert caught.value.reason == "bad format"
    assert str(caught.value) == "bad format"


def test_a_blob_sealed_with_a_key_not_held_is_told_apart() -> None:
    sealed = Sealer(OLD).seal(TOKEN, ALICE)
    with pytest.raises(Unreadable) as caught:
        Sealer(KEY).open(sealed, ALICE)
    assert caught.value.reason == "other key"


def test_the_previous_key_opens_and_the_next_write_seals_with_the_current() -> None:
    before = Sealer(OLD).seal(TOKEN, ALICE)
    rotated = Sealer(KEY, previous=OLD)
    assert rotated.open(before, ALICE) == TOKEN
    again = rotated.seal(rotated.open(before, ALICE), ALICE)
    assert again.split(".")[1] == key_id(KEY) != key_id(OLD)
    assert Sealer(KEY).open(again, ALICE) == TOKEN  # readable without the old key
    assert rotated.kids == (key_id(KEY), key_id(OLD))
    assert repr(rotated) == f"Sealer(kid={key_id(KEY)!r}, opens={list(rotated.kids)!r})"


def encodings(key: bytes) -> list[str]:
    standard = base64.b64encode(key).decode()
    url_safe = base64.urlsafe_b64encode(key).decode()
    return [standard, standard.rstrip("="), url_safe, url_safe.rstrip("="), f"  {standard}\n"]


def test_the_key_is_base64_of_32_bytes_in_either_alphabet_padded_or_not() -> None:
    key = bytes([0xFB, 0xFF, 0xBE] * 10 + [0xFB, 0xEF])  # '+' and '/' in standard base64
    assert "+" in base64.b64encode(key).decode() and "/" in base64.b64encode(key).decode()
    for text in encodings(key):
        assert parse_key(text) == key
    sealer = Sealer.from_values(base64.urlsafe_b64encode(key).decode().rstrip("="), None)
    assert sealer.kid == key_id(key) and sealer.kids == (key_id(key),)
    assert Sealer.from_values(base64.b64encode(key).decode(), "").kids == (key_id(key),)


def test_a_missing_short_or_not_base64_key_names_its_variable() -> None:
    good = base64.b64encode(os.urandom(32)).decode()
    short = base64.b64encode(os.urandom(16)).decode()
    cases = [
        ((None, None), "SLACK_AGENT_SECRET_KEY is not set"),
        (("  ", None), "SLACK_AGENT_SECRET_KEY is not set"),
        ((short, None), "SLACK_AGENT_SECRET_KEY decodes to 16 bytes, needs 32"),
        (("not base64!*", None), "SLACK_AGENT_SECRET_KEY is not base64"),
        (("abcde", None), "SLACK_AGENT_SECRET_KEY is not base64"),
        ((good, short), "SLACK_AGENT_SECRET_KEY_PREVIOUS decodes to 16 bytes, needs 32"),
        ((good, "%%%%"), "SLACK_AGENT_SECRET_KEY_PREVIOUS is not base64"),
    ]
    for (current, previous), message in cases:
        with pytest.raises(ConfigError) as caught:
            Sealer.from_values(current, previous)
        assert str(caught.value).startswith(message)
        for value in (current, previous):
            if value and value.strip():
                assert value.strip() not in str(caught.value)  # never the value itself
