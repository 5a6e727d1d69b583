"""Which pages a URL question may send a person to, and the host shown beside the link
(pure)."""

from __future__ import annotations

from tools.questions import URL_MAX_CHARS, page_host


def test_an_https_page_and_its_host() -> None:
    assert page_host("https://accounts.example.com/login?next=%2F") == "accounts.example.com"
    assert page_host("HTTPS://Accounts.Example.COM:8443/x") == "accounts.example.com"
    # A name in another script shows as the look-alike it is.
    assert page_host("https://аpple.com/") == "xn--pple-43d.com"


def test_every_other_page_is_refused() -> None:
    for url in (
        "http://accounts.example.com/login",
        "javascript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "https:accounts.example.com",  # no host
        "https:///accounts.example.com",
        "https://good.example@evil.example/",  # a user name in front of the real host
        "https://evil.example\\@good.example/",  # browsers and Python disagree on the host
        "https://accounts.example.com/a b",
        "https://accounts.example.com/\x00",
        "https://accounts.example.com:port/",
        "https://x.example/" + "a" * URL_MAX_CHARS,
        "",
    ):
        assert page_host(url) is None, url
