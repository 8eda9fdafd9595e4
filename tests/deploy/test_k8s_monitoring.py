"""deploy/k8s/monitoring: the Prometheus Operator component renders with the base, its
ServiceMonitor scrapes the server's Service on a port and path the service has, and its
PrometheusRule holds the very rules deploy/prometheus/alerts.yml has (which promtool tests)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.test_deploy import (
    DEPLOY,
    K8S_BASE,
    K8S_GPU,
    k8s,
    load_yaml,
    routes,
    with_component,
)

MONITORING = DEPLOY / "k8s" / "monitoring"


def test_the_prometheus_rule_holds_the_tested_rules() -> None:
    import runpy

    render = runpy.run_path(str(MONITORING / "render_rules.py"))["render"]
    rendered = (MONITORING / "prometheusrule.yaml").read_text()
    assert render() == rendered, "run python deploy/k8s/monitoring/render_rules.py"
    (rule,) = load_yaml(MONITORING / "prometheusrule.yaml")
    alerts = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    assert rule["spec"]["groups"] == alerts["groups"]
    assert rule["metadata"]["namespace"] == k8s("Namespace")["metadata"]["name"]


def test_the_service_monitor_scrapes_the_server_service() -> None:
    (monitor,) = load_yaml(MONITORING / "servicemonitor.yaml")
    service = k8s("Service", "absa")
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] in routes()


@pytest.mark.parametrize("overlay", [K8S_BASE, K8S_GPU], ids=lambda p: p.name)
def test_the_component_renders_with_each_overlay(overlay: Path, tmp_path: Path) -> None:
    """As a user's overlay would add it, with the label kube-prometheus-stack selects."""
    docs = with_component(
        overlay, MONITORING, tmp_path, labels=[{"pairs": {"release": "prometheus"}}]
    )
    for kind in ("ServiceMonitor", "PrometheusRule"):
        assert k8s(kind, "absa", docs)["metadata"]["labels"]["release"] == "prometheus"
    assert k8s("Deployment", "absa", docs)  # the overlay's own objects are all there
