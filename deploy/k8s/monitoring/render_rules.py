"""Write prometheusrule.yaml from deploy/prometheus/alerts.yml (the rules promtool tests):
run it after editing the rules. A test checks that the two are in step.

    python deploy/k8s/monitoring/render_rules.py
"""

from __future__ import annotations

from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
RULES = HERE.parents[1] / "prometheus" / "alerts.yml"
OUT = HERE / "prometheusrule.yaml"
HEAD = """\
# Generated from deploy/prometheus/alerts.yml by render_rules.py (beside this file): edit the
# rules there and run it. For the Prometheus Operator; see kustomization.yaml.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: absa
  namespace: absa
  labels:
    app.kubernetes.io/name: absa
spec:
"""


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the rules' expressions) as literal blocks, as written."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def render() -> str:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    body = yaml.dump({"groups": groups}, Dumper=_Dumper, sort_keys=False, width=100)
    return HEAD + "".join("  " + line if line.strip() else line for line in body.splitlines(True))


if __name__ == "__main__":
    OUT.write_text(render())
