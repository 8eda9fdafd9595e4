"""deploy/k8s/tracing: the component renders with each overlay, turns tracing on where the
server pods read their settings, and lets them reach the collector it names, and DNS, and
nothing more; the sampler it sets is one the OpenTelemetry SDK knows."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.deploy.test_deploy import DEPLOY, K8S_BASE, K8S_GPU, k8s, load_yaml, with_component

TRACING = DEPLOY / "k8s" / "tracing"


def rendered(overlay: Path, tmp_path: Path) -> tuple[dict, ...]:
    return with_component(overlay, TRACING, tmp_path)


def settings_patch() -> dict[str, str]:
    (patch,) = load_yaml(TRACING / "configmap-patch.yaml")
    return patch["data"]


@pytest.mark.parametrize("overlay", [K8S_BASE, K8S_GPU], ids=lambda p: p.name)
def test_the_server_pods_get_tracing_on_with_the_collector(overlay: Path, tmp_path: Path) -> None:
    docs = rendered(overlay, tmp_path)
    deployment = k8s("Deployment", "absa", docs)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    read = {e["configMapRef"]["name"] for e in container["envFrom"] if "configMapRef" in e}
    config = k8s("ConfigMap", "absa-config", docs)
    assert config["metadata"]["name"] in read
    assert config["data"]["ABSA_TRACING"] == "true"
    assert (
        config["data"]["OTEL_EXPORTER_OTLP_ENDPOINT"]
        == (settings_patch()["OTEL_EXPORTER_OTLP_ENDPOINT"])
    )
    assert config["data"]["ABSA_REGISTRY"] == "/models"  # the base's settings kept
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert {"absa-server", "absa-server-tracing"} <= {p["metadata"]["name"] for p in policies}


def test_the_egress_reaches_the_collector_named_and_dns_only() -> None:
    """The policy and the endpoint agree: the pods it selects are the server's, the
    collector's namespace is the endpoint host's, and the port is the endpoint's."""
    (policy,) = load_yaml(TRACING / "networkpolicy.yaml")
    pods = k8s("Deployment", "absa")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pods.items()
    assert policy["metadata"]["namespace"] == k8s("Namespace")["metadata"]["name"]
    assert policy["spec"]["policyTypes"] == ["Egress"]  # the base's ingress rule stands
    endpoint = urlsplit(settings_patch()["OTEL_EXPORTER_OTLP_ENDPOINT"])
    service, namespace = endpoint.hostname.split(".")[:2]
    collector, dns = policy["spec"]["egress"]
    (to,) = collector["to"]
    assert to["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": namespace}
    assert to["podSelector"]["matchLabels"]  # its pods, not the whole namespace
    assert collector["ports"] == [{"port": endpoint.port, "protocol": "TCP"}]
    assert {(p["port"], p["protocol"]) for p in dns["ports"]} == {(53, "UDP"), (53, "TCP")}
    (to,) = dns["to"]
    assert to["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}
    assert endpoint.scheme == "http" and service


def test_the_sampler_set_is_one_the_sdk_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown sampler name would leave every request traced, with a warning only."""
    pytest.importorskip("opentelemetry.sdk.trace")
    from absa.service.tracing import Tracing

    for name, value in settings_patch().items():
        if name.startswith("OTEL_"):
            monkeypatch.setenv(name, value)
    sampler = Tracing(True).provider.sampler.get_description()
    assert sampler.startswith("ParentBased{root:TraceIdRatioBased{0.1}")
