"""Every Prometheus metric the bot exports, in one place.

They live in prometheus_client's default registry, which ``/metrics`` serves; a worker
process under a supervisor records them in the supervisor's multiprocess directory instead,
and the supervisor's ``/metrics`` adds them to its own (bot/observability/process_metrics.py:
counters and histograms add up; every gauge is ``livemax``, the largest of the live
processes). Labels carry
only names the operator chose or the code fixed (model, tool, Slack method, outcome kinds),
never a person's text or IDs.

Recording is done by the hooks beside the events (the turn's observer, the owner, the model
client, the Slack client, the worker); every hook goes through :func:`safely`, so a metrics
failure never fails a turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import Counter, Gauge, Histogram

log = logging.getLogger(__name__)

PREFIX = "slack_agent_"
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
ROUND_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50)
LABEL_MAX = 64  # a label value longer than this is cut

TURNS = Counter(
    PREFIX + "turns",
    "Turns finished, each once: delivered ones by outcome (answered, round_limit, failed, "
    "cancelled), dead_lettered for turns given up.",
    ["outcome"],
)
TURN_ROUNDS = Histogram(
    PREFIX + "turn_rounds", "Model rounds per settled turn.", buckets=ROUND_BUCKETS
)
TOOL_CALLS = Counter(
    PREFIX + "tool_calls",
    "Tool calls, by tool and outcome (ok, or the error kind such as TimeoutError).",
    ["tool", "outcome"],
)
TOOL_SECONDS = Histogram(
    PREFIX + "tool_call_seconds", "Tool call latency.", ["tool"], buckets=LATENCY_BUCKETS
)
MODEL_CALLS = Counter(
    PREFIX + "model_calls",
    "Model calls, by model and outcome (ok, or the LLMError kind).",
    ["model", "outcome"],
)
MODEL_SECONDS = Histogram(
    PREFIX + "model_call_seconds",
    "Model call latency, request to last token.",
    ["model"],
    buckets=LATENCY_BUCKETS,
)
MODEL_FIRST_TOKEN_SECONDS = Histogram(
    PREFIX + "model_time_to_first_token_seconds",
    "Time from the request to the first streamed chunk with content.",
    ["model"],
    buckets=LATENCY_BUCKETS,
)
MODEL_TOKENS = Counter(
    PREFIX + "model_tokens",
    "Tokens by model and kind (input, output), as the server reported them or estimated.",
    ["model", "kind"],
)
MODEL_COST = Counter(
    PREFIX + "model_cost",
    "Cost by model in the currency of llm.prices (models without a price add nothing).",
    ["model"],
)
BUDGET_REFUSALS = Counter(
    PREFIX + "budget_refusals",
    "Model calls refused before they were made because a spending limit was reached, by "
    "the limit's scope (user, role, channel, workspace) and metric (tokens, cost).",
    ["scope", "metric"],
)
QUEUE_DEPTH = Gauge(
    PREFIX + "queue_depth",
    "Turns accepted and not finished (queued or running), read from Redis; the same value "
    "on every replica: aggregate with max, not sum.",
    multiprocess_mode="livemax",
)
QUEUE_OLDEST_SECONDS = Gauge(
    PREFIX + "queue_oldest_turn_age_seconds",
    "Age of the oldest turn accepted and not finished, read from Redis (0 when none); the "
    "same value on every replica: aggregate with max.",
    multiprocess_mode="livemax",
)
TAKEOVERS = Counter(
    PREFIX + "turns_taken_over",
    "Turns this worker claimed after their owner stopped heart-beating or handed them back.",
)
DELIVERY_RETRIES = Counter(
    PREFIX + "delivery_retries", "Deliveries tried again after Slack did not take the answer."
)
DEAD_LETTERS = Counter(
    PREFIX + "dead_letters",
    "Turns given up, by reason: attempts, delivery_timeout, undeliverable, unreadable.",
    ["reason"],
)
WORKER_PROCESSES = Gauge(
    PREFIX + "worker_processes",
    "Worker processes alive under this supervisor (`run --workers N`, `worker --processes "
    "N`); 0 in a process that runs its worker loop itself.",
    multiprocess_mode="livemax",
)
WORKER_RESTARTS = Counter(
    PREFIX + "worker_restarts",
    "Worker processes this supervisor started again after one died.",
)
SLACK_CALLS = Counter(PREFIX + "slack_api_calls", "Slack Web API calls, by method.", ["method"])
SLACK_ERRORS = Counter(
    PREFIX + "slack_api_errors",
    "Slack Web API calls that failed, by method and error (Slack's error code, or the "
    "exception's class).",
    ["method", "error"],
)
SLACK_RATE_LIMITED = Counter(
    PREFIX + "slack_api_rate_limited",
    "HTTP 429 answers from the Slack Web API, by method (each one, retried or not).",
    ["method"],
)
OAUTH_CALLBACKS = Counter(
    PREFIX + "oauth_callbacks",
    "Sign-in callbacks (GET /oauth/callback) answered, by outcome: connected, declined (the "
    "person did not allow access), unknown_state, other_browser (no cookie of the browser "
    "that started it), reload (finished before), refused (the authorization server refused "
    "the code, or its answer failed a check such as iss), unavailable (it could not be "
    "reached, or Redis could not be: any sign-in page), cross_site (POST /oauth/start not from "
    "the start page shown in that browser).",
    ["outcome"],
)
SCHEDULES_ACTIVE = Gauge(
    PREFIX + "schedules_active",
    "Schedules active (neither paused nor ended), read from Redis by every worker process's "
    "scheduler; the same value on every replica: aggregate with max, not sum.",
    multiprocess_mode="livemax",
)
SCHEDULE_RUNS = Counter(
    PREFIX + "schedule_runs",
    "Schedules' occurrences handled, each once across replicas, by outcome: fired (its turn "
    "queued), skipped (too late to run: counted as missed), paused (the owner left the "
    "workspace), failed (a Slack call failed: tried again when the claim lapses).",
    ["outcome"],
)
SCHEDULE_RUNS_LATE = Counter(
    PREFIX + "schedule_runs_late",
    "Schedules' runs fired more than 5 s after their time.",
)
SCHEDULE_RUNS_MISSED = Counter(
    PREFIX + "schedule_runs_missed",
    "Schedules' occurrences passed over without a run (no replica ran, Redis was down, or "
    "later than schedules.catch_up_s).",
)


def label(value: object) -> str:
    """A label value: text, cut to a bounded length."""
    text = str(value) if value is not None else ""
    return text[:LABEL_MAX]


def safely(record: Callable[[], object]) -> None:
    """Run a recording step; a failure is logged at DEBUG and never raised."""
    try:
        record()
    except Exception:
        log.debug("recording a metric failed", exc_info=True)
