"""deploy/grafana/absa.json: every panel reads series the service exports, every metric the
service exports is on some panel, and each query is PromQL that gives data on the metrics of
a real app that served requests (checked with promtool: a rule ``absent(<query>)`` per panel
query, fed the app's own /metrics, must stay quiet)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.test_alerts import NAME, exported
from tests.service.conftest import make_settings
from tests.service.test_shadow import wait_for

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "absa.json"
TEXT = "the wine list was great but the food was awful"


def queries() -> list[tuple[str, str]]:
    """(panel title, query) of every panel target."""
    dash = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dash["panels"]
        for target in panel.get("targets", [])
    ]


def test_panels_read_what_the_service_exports_and_show_all_of_it() -> None:
    dash = json.loads(DASHBOARD.read_text())
    ids = [panel["id"] for panel in dash["panels"]]
    assert len(ids) == len(set(ids))
    read = {name for _, expr in queries() for name in NAME.findall(expr)}
    assert read <= exported(), read - exported()
    families = {re.sub(r"_(total|bucket|sum|count)$", "", name) for name in exported()}
    shown = {re.sub(r"_(total|bucket|sum|count)$", "", name) for name in read}
    assert families <= shown, families - shown  # a new metric needs a panel
    # one deployment at a time: "All" summed a staging and a production absa together
    chosen = {v["name"]: v for v in dash["templating"]["list"]}
    for name in ("namespace", "job"):
        assert not chosen[name]["includeAll"] and not chosen[name]["multi"]
        assert all(f'{name}=~"${name}"' in expr for _, expr in queries() if "absa_" in expr)


@pytest.fixture(scope="module")
def scraped(
    artifact: Path,
    artifact_v2: Path,
    extractor_artifact: Path,
    category_artifact: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """/metrics of the real app after it answered named and extracted aspects, categories, a
    batch with a bad item, and an explain request, with a shadow model beside it."""
    from absa.service.app import create_app
    from tests.helpers import category_examples

    settings = make_settings(
        artifact,
        extractor=extractor_artifact,
        category_model=category_artifact,
        max_items=8,
        sample_path=tmp_path_factory.mktemp("sample") / "answers.jsonl",
        shadow_model=artifact_v2,
        shadow_rate=1.0,
    )
    asked = category_examples()[0]
    with TestClient(create_app(settings)) as client:
        for _ in range(3):
            assert client.post("/v1/predict", json={"text": TEXT}).status_code == 200
            r = client.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]})
            assert r.status_code == 200, r.text
            r = client.post(
                "/v1/predict", json={"text": asked.text, "categories": [asked.category]}
            )
            assert r.status_code == 200, r.text
        items = [{"text": TEXT, "aspects": ["food"]}, {"text": TEXT, "aspects": ["burger"]}]
        assert client.post("/v1/predict/batch", json={"items": items}).status_code == 200
        yield wait_for(client, "compared", 4)  # the shadow scored the named aspects, at least


def series(metrics: str, deployment: dict[str, str], version: str) -> list[dict[str, str]]:
    """promtool input series for the app's absa samples, as Prometheus would store them from
    a deployment's scrapes (its labels added; absa_model_info's version set to ``version``):
    counters grow by their value a minute, gauges hold it."""
    out = []
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if not sample.name.startswith("absa_") or sample.name.endswith("_created"):
                continue
            labels = {**sample.labels, **deployment}
            if sample.name == "absa_model_info" and sample.value == 1:
                labels["version"] = version
            body = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            value = sample.value
            growing = family.type in ("counter", "histogram")
            out.append(
                {
                    "series": f"{sample.name}{{{body}}}",
                    "values": f"0+{value}x30" if growing else f"{value}x30",
                }
            )
    return out


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool: apt-get install prometheus")
@pytest.mark.parametrize(
    "labels",
    [{"namespace": "prod", "job": "absa"}, {"job": "absa"}],  # Kubernetes; compose (no namespace)
    ids=["kubernetes", "compose"],
)
def test_every_panel_query_gives_data_on_a_served_apps_metrics(
    scraped: str, tmp_path: Path, labels: dict[str, str]
) -> None:
    """Each query, with the dashboard's variables set to the deployment (an empty namespace
    where the scrape has none), gives data; and a second deployment scraped by the same
    Prometheus (another job, on another model) is not mixed in: "Models served" shows one."""
    chosen = {"$__rate_interval": "5m", "$namespace": labels.get("namespace", ""), "$job": "absa"}
    rules: list[dict] = []
    for i, (title, expr) in enumerate(queries()):
        for name, value in chosen.items():
            expr = expr.replace(name, value)
        rules.append({"alert": f"Empty{i}", "expr": f"absent({expr})", "labels": {"q": title}})
        if title == "Models served":
            rules.append({"record": "models_served", "expr": expr})
    rules.append({"alert": "Control", "expr": "absent(absa_no_such_metric)"})  # it does fire
    (tmp_path / "rules.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]})
    )
    alerts = [r["alert"] for r in rules if "alert" in r]
    checks = [{"eval_time": "20m", "alertname": a, "exp_alerts": []} for a in alerts[:-1]]
    checks.append({"eval_time": "20m", "alertname": "Control", "exp_alerts": [{"exp_labels": {}}]})
    other = {**labels, "job": "absa-staging"}
    mine = series(scraped, labels, "1.0.0")
    (name,) = set(re.findall(r'^absa_model_info\{[^}]*name="([^"]+)"', scraped, re.M))
    (digest,) = set(re.findall(r'^absa_model_info\{[^}]*digest="([^"]+)"', scraped, re.M))
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": mine + series(scraped, other, "2.0.0"),
                "alert_rule_test": checks,
                "promql_expr_test": [
                    {
                        "expr": "models_served",
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": (
                                    f'models_served{{digest="{digest}", name="{name}", '
                                    'version="1.0.0"}'
                                ),
                                "value": 1,
                            }
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    for command in (["check", "rules", "rules.yml"], ["test", "rules", "test.yml"]):
        done = subprocess.run(
            ["promtool", *command], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr


def mounts(service: dict) -> dict[str, Path]:
    """A compose service's bind mounts: container path -> path under deploy/."""
    out = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("./"):
            out[target] = DASHBOARD.parents[1] / source[2:]
    return out


def test_the_compose_monitoring_profile_scrapes_the_service_and_shows_the_dashboard() -> None:
    compose = yaml.safe_load((DASHBOARD.parents[1] / "docker-compose.yml").read_text())
    services = compose["services"]
    prometheus, grafana = services["prometheus"], services["grafana"]
    assert prometheus["profiles"] == grafana["profiles"] == ["monitoring"]
    # Prometheus reads deploy/prometheus: its config scrapes the absa service's port and
    # loads the alerting rules tested in test_alerts.py
    config_flag = next(a for a in prometheus["command"] if a.startswith("--config.file="))
    config_path = config_flag.split("=", 1)[1]
    folder = mounts(prometheus)[str(Path(config_path).parent)]
    config = yaml.safe_load((folder / Path(config_path).name).read_text())
    (job,) = config["scrape_configs"]
    (target,) = job["static_configs"][0]["targets"]
    assert target == f"absa:{services['absa']['environment']['ABSA_PORT']}"
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert config["rule_files"] == ["alerts.yml"] and (folder / "alerts.yml").is_file()
    # Grafana: the provisioned data source is that Prometheus, the provider's folder holds
    # the dashboard
    grafana_mounts = mounts(grafana)
    provisioning = grafana_mounts["/etc/grafana/provisioning"]
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())[
        "datasources"
    ]
    port = prometheus["ports"][0].rsplit(":", 1)[1]
    assert source["url"] == f"http://prometheus:{port}" and source["type"] == "prometheus"
    assert source["isDefault"] is True
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "absa.yml").read_text())[
        "providers"
    ]
    shown = [t for t, p in grafana_mounts.items() if p == DASHBOARD]
    assert [str(Path(t).parent) for t in shown] == [provider["options"]["path"]]
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home in shown


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool: apt-get install prometheus")
def test_the_compose_prometheus_config_is_valid() -> None:
    done = subprocess.run(
        ["promtool", "check", "config", "prometheus.yml"],
        cwd=DASHBOARD.parents[1] / "prometheus",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_compose_monitoring_profile_takes_the_services_traces() -> None:
    """`ABSA_TRACING=true docker compose --profile monitoring up`: the service's exporter
    points at the profile's Jaeger, on the port where Jaeger takes OTLP over HTTP."""
    compose = yaml.safe_load((DASHBOARD.parents[1] / "docker-compose.yml").read_text())
    services = compose["services"]
    env = services["absa"]["environment"]
    assert env["ABSA_TRACING"] == "${ABSA_TRACING:-false}"  # off unless the shell says so
    endpoint = re.fullmatch(
        r"\$\{OTEL_EXPORTER_OTLP_ENDPOINT:-(.+)\}", env["OTEL_EXPORTER_OTLP_ENDPOINT"]
    )
    assert endpoint, env["OTEL_EXPORTER_OTLP_ENDPOINT"]
    host, port = endpoint.group(1).removeprefix("http://").split(":")
    jaeger = services[host]
    assert jaeger["profiles"] == ["monitoring"] and port == "4318"  # Jaeger's OTLP/HTTP port
    assert jaeger["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
