"""The redactor's parts: which values are secrets (every ${ENV} value in any MCP setting,
every URL's password), how each is replaced (as written, inside JSON, inside a URL; URL
credentials and secret-named query parameters always), every log record redacted whoever
logs it and whichever handler writes it, and spans redacted on their way out."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from opentelemetry.trace import Status, StatusCode

from bot.config.environment import Environment
from bot.config.loading import parse_config
from bot.observability import logs, tracing
from bot.observability.redaction import REDACTOR, Redactor, without_queries
from bot.observability.secrets import configured_secrets, named_in_file
from tests.bot.observability.test_trace_processes import Collector
from tests.waiting import until


def test_a_secret_is_replaced_as_written_inside_json_and_inside_a_url() -> None:
    redactor = Redactor()
    redactor.add(['pa"ss/word+1 x'])
    assert redactor.redact('raw pa"ss/word+1 x') == "raw [redacted]"
    assert redactor.redact(json.dumps({"k": 'pa"ss/word+1 x'})) == '{"k": "[redacted]"}'
    assert redactor.redact("http://h/?q=pa%22ss%2Fword%2B1%20x") == "http://h/?q=[redacted]"
    assert redactor.redact("http://h/?q=pa%22ss%2Fword%2B1+x") == "http://h/?q=[redacted]"
    redactor.add(["clé-secrète"])
    assert redactor.redact(json.dumps({"k": "clé-secrète"})) == '{"k": "[redacted]"}'
    assert redactor.redact(repr("clé-secrète\n")) == "'[redacted]\\n'"


def test_url_credentials_and_secret_named_parameters_are_always_replaced() -> None:
    redactor = Redactor()  # knows no secret
    text = (
        "POST https://me:hunter2@api.example.com/v1?api_key=k1&page=2&access_token=t1 and "
        '"redis://:pw@cache:6379/0" sig=unrelated'
    )
    assert redactor.redact(text) == (
        "POST https://[redacted]@api.example.com/v1?api_key=[redacted]&page=2"
        '&access_token=[redacted] and "redis://[redacted]@cache:6379/0" sig=unrelated'
    )
    assert (
        without_queries('GET http://h:1/mcp?a=1&b=2 "200"') == 'GET http://h:1/mcp?[redacted] "200"'
    )


def test_oauth_forms() -> None:
    """A person's token, a sign-in's code, verifier and state, in the forms they take in a
    URL, a form body, a token response and a header, replaced by a redactor that knows none
    of them; the words around them, and "state" in a sentence, kept."""
    redactor = Redactor()
    callback = "GET https://bot.example.com/oauth/callback?code=c0de-1&state=0/st4te-2&iss=x"
    assert redactor.redact(callback) == (
        "GET https://bot.example.com/oauth/callback?code=[redacted]&state=[redacted]&iss=x"
    )
    body = (
        "grant_type=authorization_code&code=c0de-3&code_verifier=v3rifier-4"
        "&client_assertion=eyJhbGciOi.x.y&assertion=eyJz.a.b&redirect_uri=https://b/cb"
        "&refresh_token=rt-5&client_secret=cs-6&error_code=E42"
    )
    assert redactor.redact(body) == (
        "grant_type=authorization_code&code=[redacted]&code_verifier=[redacted]"
        "&client_assertion=[redacted]&assertion=[redacted]&redirect_uri=https://b/cb"
        "&refresh_token=[redacted]&client_secret=[redacted]&error_code=E42"
    )
    response = json.dumps(
        {
            "access_token": "at-7",
            "token_type": "Bearer",
            "refresh_token": 'rt-"8',
            "id_token": "eyJ-9",
            "scope": "files:read",
            "client_id": "client-1",
            "client_secret": "cs-10",
            "code": "c0de-11",
            "code_verifier": "v-12",
        }
    )
    redacted = redactor.redact(f"token response not valid: {response}")
    for secret in ("at-7", "rt-", "eyJ-9", "cs-10", "c0de-11", "v-12"):
        assert secret not in redacted
    assert json.loads(redacted.split(": ", 1)[1]) == {
        "access_token": "[redacted]",
        "token_type": "Bearer",
        "refresh_token": "[redacted]",
        "id_token": "[redacted]",
        "scope": "files:read",
        "client_id": "client-1",
        "client_secret": "[redacted]",
        "code": "[redacted]",
        "code_verifier": "[redacted]",
    }
    header = "{'Authorization': 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig_-x'}"
    assert redactor.redact(header) == "{'Authorization': 'Bearer [redacted]'}"
    assert redactor.redact("authorization: basic dXNlcjpwYXNz") == "authorization: basic [redacted]"
    assert redactor.redact("Basic YWxhZGRpbjpvcGVuc2VzYW1l==") == "Basic [redacted]"
    assert redactor.redact("BEARER abcdefghijklmnopqrstuvwxyz") == "BEARER [redacted]"
    # Ordinary words stay: "state" in a sentence, a state= that is no query parameter, a
    # basic word after "Basic", a short "Bearer" mention.
    for text in (
        "the turn's state moved to answered; state=answered",
        "turn state=running code=200",
        "Basic authentication is off",
        "a Bearer token is needed",
        '{"state": "pending", "codes": "x", "token_type": "Bearer"}',
    ):
        assert redactor.redact(text) == text


def test_every_value_substituted_anywhere_in_an_mcp_server_is_a_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = {
        "V_URL": "url-secret-1",
        "V_ARG": "arg-secret-2",
        "V_CMD": "/opt/cmd-secret-3",
        "V_CWD": "/srv/cwd-secret-4",
        "V_HEADER": "header-secret-5",
        "V_ENV": "env-secret-6",
        "V_PASS": "url-password-7",
        "V_FILE": "servers-file-8",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    config = parse_config(
        """
mcp:
  servers:
    local:
      command: ${V_CMD}
      args: ["--token=${V_ARG}", "--plain"]
      cwd: ${env:V_CWD}
      env: {TOKEN: "${V_ENV}", FIXED: "a-fixed-env-value"}
    remote:
      url: https://user:${V_PASS}@mcp.example.com/mcp?api_key=${V_URL}
      headers: {Authorization: "Bearer ${V_HEADER}"}
"""
    )
    found = set(configured_secrets(Environment(), config, environ={}))
    assert set(values.values()) - {"servers-file-8"} <= found
    assert "a-fixed-env-value" in found and "Bearer header-secret-5" in found
    assert "--plain" not in found and "https" not in " ".join(found)


def test_sign_in_secrets_are_configured_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys people's tokens are sealed with, and each pre-registered client's secret
    (from the environment or written in the file) and substituted id."""
    monkeypatch.setenv("V_CLIENT_ID", "client-id-1")
    monkeypatch.setenv("V_CLIENT_SECRET", "client-secret-2")
    config = parse_config(
        """
oauth: {redirect_base_url: "https://bot.example.com"}
mcp:
  servers:
    slack:
      url: https://mcp.slack.com/mcp
      auth: oauth
      oauth: {client_id: "${V_CLIENT_ID}", client_secret: "${env:V_CLIENT_SECRET}"}
    written:
      url: https://mcp.example.com/mcp
      auth: oauth
      oauth: {client_id: public-id, client_secret: written-secret-3, scopes: [read]}
    linear: {url: "https://mcp.linear.app/mcp", auth: oauth}
"""
    )
    environment = Environment(
        slack_agent_secret_key="sealing-key-4", slack_agent_secret_key_previous="old-key-5"
    )
    found = set(configured_secrets(environment, config, environ={}))
    wanted = {"client-id-1", "client-secret-2", "written-secret-3", "sealing-key-4", "old-key-5"}
    assert wanted <= found
    assert "public-id" not in found and "read" not in found
    assert {"sealing-key-4", "old-key-5"} <= set(configured_secrets(environment, None, {}))


def test_the_environments_url_passwords_and_otlp_headers_are_secrets() -> None:
    environment = Environment(
        redis_url="redis://:redis-pw-1@cache:6379/0",
        openai_base_url="https://u:llm-pw%2F2@llm.example.com/v1",
        slack_api_url="https://slack.com/api/",
        slack_bot_token="xoxb-bot-token",
    )
    environ = {
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20otlp-token-3,x-tenant=tenant-4",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel:otlp-pw-5@collector:4318",
    }
    found = set(configured_secrets(environment, None, environ))
    wanted = {"redis-pw-1", "llm-pw/2", "otlp-token-3", "tenant-4", "otlp-pw-5", "xoxb-bot-token"}
    assert wanted <= found


def test_a_config_that_does_not_load_still_names_its_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NAMED_IN_FILE", "named-secret-1")
    path = tmp_path / "agent.yaml"
    path.write_text("mcp: {servers: {x: {args: ['${NAMED_IN_FILE}'], bogus: 1}}}\n")
    assert named_in_file(path) == ["named-secret-1"]
    assert named_in_file(tmp_path / "missing.yaml") == []


@pytest.fixture
def configured() -> Iterator[io.StringIO]:
    """``logs.configure`` as the CLI calls it, undone afterwards (the rest of the session
    keeps pytest's own logging)."""
    root = logging.getLogger()
    handlers, level, last_resort = root.handlers[:], root.level, logging.lastResort
    levels = {name: logging.getLogger(name).level for name in logs.URL_LOGGERS}
    factory = logging.getLogRecordFactory()
    stream = io.StringIO()
    try:
        yield stream
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.lastResort = last_resort
        logging.setLogRecordFactory(factory)
        for name, was in levels.items():
            logging.getLogger(name).setLevel(was)


def test_every_record_is_redacted_whoever_logs_it_and_whatever_writes_it(
    configured: io.StringIO,
) -> None:
    logs.configure("INFO", "text", configured)
    REDACTOR.add(["record-secret-zz1"])
    # A handler another library attached, with its own formatter.
    theirs = io.StringIO()
    foreign = logging.getLogger("some.library")
    own_handler = logging.StreamHandler(theirs)
    foreign.addHandler(own_handler)
    try:
        foreign.info("GET https://h/x?q=record-secret-zz1&page=2 done")
        foreign.warning("failed", exc_info=ValueError("record-secret-zz1 in the error"))
        logging.getLogger("bot.something").info("own line: http://h/x?page=3 record-secret-zz1")
    finally:
        foreign.removeHandler(own_handler)
    assert "record-secret-zz1" not in theirs.getvalue() + configured.getvalue()
    # Another library's line at INFO loses its URL's query; the bot's keeps it.
    assert "GET https://h/x?[redacted] done" in theirs.getvalue()
    assert "ValueError: [redacted] in the error" in theirs.getvalue()
    assert "own line: http://h/x?page=3 [redacted]" in configured.getvalue()


def test_the_http_clients_request_lines_only_at_debug_and_last_resort_redacts(
    configured: io.StringIO,
) -> None:
    logs.configure("INFO", "json", configured)
    assert all(logging.getLogger(n).level == logging.WARNING for n in logs.URL_LOGGERS)
    REDACTOR.add(["last-resort-secret-zz2"])
    lonely = logging.getLogger("a.lonely.logger")
    lonely.propagate = False  # no handler anywhere: Python's last resort writes it
    try:
        lonely.error("lonely last-resort-secret-zz2")
    finally:
        lonely.propagate = True
    [line] = [json.loads(text) for text in configured.getvalue().splitlines()]
    assert line["message"] == "lonely [redacted]"
    logs.configure("DEBUG", "text", configured)
    assert all(logging.getLogger(n).level == logging.NOTSET for n in logs.URL_LOGGERS)


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    made = Collector()
    await made.start()
    try:
        yield made
    finally:
        await made.stop()


async def test_spans_are_exported_redacted(collector: Collector) -> None:
    REDACTOR.add(["span-secret-zz3"])
    provider = tracing.build_provider(collector.url, "redaction-test", {})
    try:
        span = provider.get_tracer("test").start_span(
            "call span-secret-zz3",
            attributes={
                "url.full": "https://u:pw-zz4@h/mcp?tenant=t1",
                "note": "said span-secret-zz3",
                "many": ["span-secret-zz3", "plain"],
                "count": 3,
            },
        )
        span.add_event("retry", {"why": "span-secret-zz3"})
        span.set_status(Status(StatusCode.ERROR, "failed: span-secret-zz3"))
        span.end()
        # The exporter blocks its thread until the collector (on this loop) answers.
        await asyncio.to_thread(provider.force_flush)
        await until(lambda: bool(collector.bodies))
    finally:
        await asyncio.to_thread(provider.shutdown)
    body = b"".join(collector.bodies)
    for secret in (b"span-secret-zz3", b"pw-zz4", b"tenant=t1"):
        assert secret not in body
    assert b"https://[redacted]@h/mcp?[redacted]" in body and b"plain" in body
