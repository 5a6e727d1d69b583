"""The ready-made dashboard and alert rules name only metrics the bot exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import REGISTRY

import bot.observability.metrics  # noqa: F401  (defines the metrics)
from bot.config.schema import AppConfig

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "deploy" / "grafana" / "slack-agent.json"
ALERTS = ROOT / "deploy" / "prometheus" / "slack-agent-alerts.yml"
OPERATIONS = ROOT / "docs" / "operations.md"
NAME = re.compile(r"\bslack_agent_[a-z0-9_]+")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def exported() -> set[str]:
    """Every series name /metrics can show for the bot's metrics."""
    names: set[str] = set()
    for family in REGISTRY.collect():
        if family.name.startswith("slack_agent_"):
            names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def dashboard_expressions() -> Iterator[str]:
    def walk(panels: list[dict[str, Any]]) -> Iterator[str]:
        for panel in panels:
            for target in panel.get("targets", ()):
                yield target["expr"]
            yield from walk(panel.get("panels", []))

    yield from walk(json.loads(DASHBOARD.read_text())["panels"])


def alert_rules() -> list[dict[str, Any]]:
    data = yaml.safe_load(ALERTS.read_text())
    return [rule for group in data["groups"] for rule in group["rules"]]


def test_every_metric_the_dashboard_and_alerts_name_exists() -> None:
    known = exported()
    expressions = [*dashboard_expressions(), *(rule["expr"] for rule in alert_rules())]
    used = {name for expr in expressions for name in NAME.findall(expr)}
    assert used and used <= known, sorted(used - known)


def test_the_dashboard_shows_every_metric() -> None:
    shown = {name for expr in dashboard_expressions() for name in NAME.findall(expr)}
    families = {
        family.name for family in REGISTRY.collect() if family.name.startswith("slack_agent_")
    }
    missing = {f for f in families if not any(name.startswith(f) for name in shown)}
    assert not missing, sorted(missing)


def test_the_alerts_cover_dead_letters_the_oldest_turn_and_the_error_rate() -> None:
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert "slack_agent_dead_letters_total" in rules["SlackAgentDeadLetters"]["expr"]
    oldest = rules["SlackAgentOldestTurnWaiting"]["expr"]
    assert "slack_agent_queue_oldest_turn_age_seconds" in oldest and "> 60" in oldest
    assert "slack_agent_turns_total" in rules["SlackAgentTurnErrorRate"]["expr"]
    runbook = OPERATIONS.read_text()
    for name, rule in rules.items():
        assert rule["labels"]["severity"] and rule["annotations"]["summary"]
        assert f"### {name}" in runbook, f"the runbook does not explain {name}"


KUBERNETES = ROOT / "deploy" / "kubernetes" / "slack-agent.yaml"


def test_the_kubernetes_example_probes_the_app_port_and_scrapes_the_metrics_port() -> None:
    deployment, service = yaml.safe_load_all(KUBERNETES.read_text())
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    command = container["command"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    flag = {name: command[command.index(name) + 1] for name in ("--port", "--metrics-port")}
    assert ports == {"http": int(flag["--port"]), "metrics": int(flag["--metrics-port"])}
    # The probes stay on the app's port, where /healthz and /readyz are in both modes.
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    # /metrics (only on --metrics-port in HTTP mode) is scraped there, never exposed.
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == flag["--metrics-port"]
    assert annotations["prometheus.io/path"] == "/metrics"
    assert [port["targetPort"] for port in service["spec"]["ports"]] == ["http"]


def manifests(name: str) -> dict[str, dict[str, Any]]:
    """The objects of deploy/kubernetes/<name>, by kind."""
    return {doc["kind"]: doc for doc in yaml.safe_load_all((KUBERNETES.parent / name).read_text())}


def container_of(deployment: dict[str, Any]) -> dict[str, Any]:
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_ingress_and_workers_are_separate_deployments_with_probes_and_budgets() -> None:
    ingress, workers = manifests("ingress.yaml"), manifests("workers.yaml")
    for objects, command, port in (
        (ingress, ["slack-agent", "run", "--no-worker"], "http"),
        (workers, ["slack-agent", "worker", "--processes"], "metrics"),
    ):
        deployment = objects["Deployment"]
        container = container_of(deployment)
        assert container["command"][: len(command)] == command
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        flags = container["command"]
        assert ports["metrics"] == int(flags[flags.index("--metrics-port") + 1])
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
        assert container["resources"]["requests"]["cpu"]
        assert container["resources"]["requests"]["memory"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"] == labels
        budget = objects["PodDisruptionBudget"]
        assert budget["spec"]["selector"]["matchLabels"] == labels
        assert budget["spec"]["minAvailable"] >= 1
    # Only the ingress is reachable from outside, and only on the app's port.
    service = ingress["Service"]
    assert service["spec"]["selector"] == ingress["Deployment"]["spec"]["selector"]["matchLabels"]
    assert [port["targetPort"] for port in service["spec"]["ports"]] == ["http"]
    # Running turns get queue.shutdown_grace_s, then the supervisor's 10 s, before the kill.
    grace = AppConfig().queue.shutdown_grace_s
    assert workers["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > (
        grace + 10
    )


def test_the_workers_scale_on_a_queue_depth_the_bot_exports() -> None:
    workers = manifests("workers.yaml")
    autoscaler = workers["HorizontalPodAutoscaler"]
    assert autoscaler["spec"]["scaleTargetRef"]["name"] == workers["Deployment"]["metadata"]["name"]
    [metric] = autoscaler["spec"]["metrics"]
    assert metric["external"]["metric"]["name"] in exported()
    assert (
        autoscaler["spec"]["minReplicas"] >= workers["PodDisruptionBudget"]["spec"]["minAvailable"]
    )
