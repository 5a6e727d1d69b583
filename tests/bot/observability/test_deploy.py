"""The ready-made dashboard and alert rules name only metrics the bot exports; the Kubernetes
examples probe, scrape and select the pods they should, one layout per folder."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
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


KUBERNETES = ROOT / "deploy" / "kubernetes"
SINGLE = KUBERNETES / "single" / "slack-agent.yaml"
# What `kubectl apply -f <folder>` reads: the folder's own files with these suffixes.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
LAYOUTS = ("single", "split")


def test_the_kubernetes_example_probes_the_app_port_and_scrapes_the_metrics_port() -> None:
    deployment, service = yaml.safe_load_all(SINGLE.read_text())
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
    return {doc["kind"]: doc for doc in yaml.safe_load_all((KUBERNETES / name).read_text())}


def container_of(deployment: dict[str, Any]) -> dict[str, Any]:
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_ingress_and_workers_are_separate_deployments_with_probes_and_budgets() -> None:
    ingress, workers = manifests("split/ingress.yaml"), manifests("split/workers.yaml")
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
    workers = manifests("split/workers.yaml")
    autoscaler = workers["HorizontalPodAutoscaler"]
    assert autoscaler["spec"]["scaleTargetRef"]["name"] == workers["Deployment"]["metadata"]["name"]
    [metric] = autoscaler["spec"]["metrics"]
    assert metric["external"]["metric"]["name"] in exported()
    assert (
        autoscaler["spec"]["minReplicas"] >= workers["PodDisruptionBudget"]["spec"]["minAvailable"]
    )


# What every Service and PodDisruptionBudget of deploy/kubernetes/ must select: the pods of
# exactly these Deployments, across both layouts (the layouts are applied one per namespace,
# but a slip that applies both must not mix their pods). The split layout's Service takes
# the ingress pods only: they serve Slack's requests; the workers have no public port.
SELECTS = {
    "single/Service/slack-agent": {"single/slack-agent"},
    "split/Service/slack-agent-ingress": {"split/slack-agent-ingress"},
    "split/PodDisruptionBudget/slack-agent-ingress": {"split/slack-agent-ingress"},
    "split/PodDisruptionBudget/slack-agent-worker": {"split/slack-agent-worker"},
}


def layout(name: str) -> list[dict[str, Any]]:
    """Every object `kubectl apply -f deploy/kubernetes/<name>/` applies."""
    folder = KUBERNETES / name
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    assert files, f"{folder} holds no manifest"
    return [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc]


def key(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def deployments() -> dict[str, dict[str, Any]]:
    """The Deployments of both layouts, by "<layout>/<name>"."""
    return {
        f"{name}/{obj['metadata']['name']}": obj
        for name in LAYOUTS
        for obj in layout(name)
        if obj["kind"] == "Deployment"
    }


def pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    return dict(deployment["spec"]["template"]["metadata"]["labels"])


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a label selector ({matchLabels, matchExpressions}) takes pods with these labels."""
    assert set(selector) <= {"matchLabels", "matchExpressions"}, selector
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        label, values = expression["key"], expression.get("values", [])
        taken = {
            "In": label in labels and labels[label] in values,
            "NotIn": label not in labels or labels[label] not in values,
            "Exists": label in labels,
            "DoesNotExist": label not in labels,
        }[expression["operator"]]
        if not taken:
            return False
    return True


def selector_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The label selector of a Deployment, a PodDisruptionBudget or a Service."""
    if obj["kind"] == "Service":  # a Service's selector is matchLabels without the key
        return {"matchLabels": obj["spec"]["selector"]}
    return dict(obj["spec"]["selector"])


def test_each_layout_has_its_own_folder_and_none_is_applied_with_the_other() -> None:
    # `kubectl apply -f deploy/kubernetes/` finds no manifest instead of applying both.
    loose = [p.name for p in KUBERNETES.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES]
    assert loose == []
    assert sorted(p.name for p in KUBERNETES.iterdir() if p.is_dir()) == sorted(LAYOUTS)
    for name in LAYOUTS:
        # `kubectl apply -f` on the folder reads every file: a kustomization there breaks it.
        for obj in layout(name):
            assert obj["kind"] != "Kustomization" and obj["metadata"]["name"], obj
            assert not obj["apiVersion"].startswith("kustomize.config.k8s.io"), obj


@pytest.mark.parametrize("name", LAYOUTS)
def test_no_two_objects_of_a_layout_share_a_kind_and_name(name: str) -> None:
    keys = [key(obj) for obj in layout(name)]
    assert keys and len(set(keys)) == len(keys), sorted(keys)


def test_the_two_layouts_share_no_object_name() -> None:
    # Applied into one namespace by mistake, they add objects: none replaces another's.
    single, split = ({obj["metadata"]["name"] for obj in layout(name)} for name in LAYOUTS)
    assert not single & split, sorted(single & split)


def test_every_deployment_selects_its_own_pods() -> None:
    for name, deployment in deployments().items():
        assert selects(selector_of(deployment), pod_labels(deployment)), name


def test_no_deployment_selects_the_pods_of_another_in_either_layout() -> None:
    everything = deployments()
    assert sorted(everything) == [
        "single/slack-agent",
        "split/slack-agent-ingress",
        "split/slack-agent-worker",
    ]
    overlaps = [
        (name, other)
        for name, deployment in everything.items()
        for other, theirs in everything.items()
        if other != name and selects(selector_of(deployment), pod_labels(theirs))
    ]
    assert overlaps == []


def test_each_service_and_budget_selects_the_pods_of_exactly_its_deployments() -> None:
    everything = deployments()
    selected: dict[str, set[str]] = {}
    for name in LAYOUTS:
        for obj in layout(name):
            if obj["kind"] not in ("Service", "PodDisruptionBudget"):
                continue
            selector = selector_of(obj)
            assert selector["matchLabels"], f"{key(obj)} selects every pod"
            taken = {d for d, pods in everything.items() if selects(selector, pod_labels(pods))}
            selected[f"{name}/{key(obj)}"] = taken
            if obj["kind"] == "Service":  # the pods it takes have the port it sends to
                for deployment in taken:
                    ports = {p["name"] for p in container_of(everything[deployment])["ports"]}
                    targets = {p["targetPort"] for p in obj["spec"]["ports"]}
                    assert targets <= ports, (key(obj), deployment)
    assert selected == SELECTS
