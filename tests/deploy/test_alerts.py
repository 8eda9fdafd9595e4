"""deploy/prometheus/alerts.yml: every series its rules and their tests read is one the
service exports, and promtool's unit tests of the rules pass (CI installs promtool, from
Debian's prometheus package)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from absa.service.metrics import Metrics

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
NAME = re.compile(r"\babsa_[a-z_]+")


def exported() -> set[str]:
    """Every absa sample name /metrics can carry (a histogram's _bucket, _sum and _count, a
    counter's _total), from the metrics' own descriptions."""
    names: set[str] = set()
    for family in Metrics().registry.collect():
        if not family.name.startswith("absa_"):  # prometheus_client's process_*, python_*
            continue
        if family.type == "histogram":
            names |= {f"{family.name}{s}" for s in ("_bucket", "_sum", "_count")}
        elif family.type == "counter":
            names.add(f"{family.name}_total")
        else:
            names.add(family.name)
    return names


def test_the_rules_read_only_series_the_service_exports() -> None:
    rules = yaml.safe_load((RULES / "alerts.yml").read_text())
    read = {
        name
        for group in rules["groups"]
        for rule in group["rules"]
        for name in NAME.findall(rule["expr"])
    }
    fed = {
        name
        for test in yaml.safe_load((RULES / "alerts.test.yml").read_text())["tests"]
        for series in test["input_series"]
        for name in NAME.findall(series["series"].split("{")[0])
    }
    assert read and read <= exported(), read - exported()
    assert fed <= exported(), fed - exported()  # the tests feed what the service writes
    assert read <= fed  # and every series a rule reads is fed to some test


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool: apt-get install prometheus")
def test_the_rules_pass_their_unit_tests() -> None:
    for command in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts.test.yml"]):
        done = subprocess.run(
            ["promtool", *command], cwd=RULES, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_refused_reload_is_a_series_before_the_first_refusal() -> None:
    """A counter series that first appears at 1 is no increase to Prometheus: the first
    refused reload since start-up raised no AbsaReloadRefused."""
    text = Metrics().expose().decode()
    assert 'absa_reloads_total{result="refused"} 0.0' in text, text
