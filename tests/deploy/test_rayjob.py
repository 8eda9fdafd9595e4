"""The bulk-scoring recipe: deploy/k8s/ray/rayjob.yaml (a KubeRay RayJob) and the Dockerfile's
`bulk` stage. Offline: KubeRay's CRDs are not among kubernetes-validate's schemas, so the
RayJob is checked in two parts, (1) its own fields against a structural JSON schema written
here from KubeRay's ray.io/v1 API (the fields this recipe uses, with their types; unknown
fields at the spec levels fail, so a typo does not pass unnoticed), and (2) every pod
template it embeds as a core/v1 PodTemplate with kubernetes-validate, strictly, as the other
manifests are. The entry point is parsed by the real `absa` command line."""

from __future__ import annotations

import re
import shlex
import tomllib
from typing import Any

import pytest

from absa.cli import build_parser
from tests.deploy.test_deploy import (
    DEPLOY,
    K8S_VERSIONS,
    ROOT,
    closure,
    dockerfile,
    load_yaml,
    pip_calls,
    stage,
)

RAYJOB = DEPLOY / "k8s" / "ray" / "rayjob.yaml"

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_PARAMS = {"type": "object", "additionalProperties": _STR}  # rayStartParams: strings only
_TEMPLATE = {"type": "object", "required": ["spec"]}  # a PodTemplateSpec: validated apart
GROUP = {
    "type": "object",
    "required": ["groupName", "replicas", "minReplicas", "maxReplicas", "template"],
    "additionalProperties": False,
    "properties": {
        "groupName": _STR,
        "replicas": _INT,
        "minReplicas": _INT,
        "maxReplicas": _INT,
        "numOfHosts": _INT,
        "rayStartParams": _PARAMS,
        "template": _TEMPLATE,
    },
}
RAYJOB_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayJob"},
        "metadata": {"type": "object", "required": ["name", "namespace"]},
        "spec": {
            "type": "object",
            "required": ["entrypoint", "rayClusterSpec"],
            "additionalProperties": False,
            "properties": {
                "entrypoint": _STR,
                "shutdownAfterJobFinishes": {"type": "boolean"},
                "ttlSecondsAfterFinished": _INT,
                "activeDeadlineSeconds": _INT,
                "backoffLimit": _INT,
                "submissionMode": {"enum": ["K8sJobMode", "HTTPMode", "InteractiveMode"]},
                "runtimeEnvYAML": _STR,
                "rayClusterSpec": {
                    "type": "object",
                    "required": ["rayVersion", "headGroupSpec", "workerGroupSpecs"],
                    "additionalProperties": False,
                    "properties": {
                        "rayVersion": {"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
                        "enableInTreeAutoscaling": {"type": "boolean"},
                        "headGroupSpec": {
                            "type": "object",
                            "required": ["template"],
                            "additionalProperties": False,
                            "properties": {
                                "rayStartParams": _PARAMS,
                                "serviceType": _STR,
                                "template": _TEMPLATE,
                            },
                        },
                        "workerGroupSpecs": {"type": "array", "minItems": 1, "items": GROUP},
                    },
                },
            },
        },
    },
}


def rayjob() -> dict[str, Any]:
    (doc,) = load_yaml(RAYJOB)
    return doc


def templates() -> list[dict[str, Any]]:
    cluster = rayjob()["spec"]["rayClusterSpec"]
    return [cluster["headGroupSpec"]["template"]] + [
        g["template"] for g in cluster["workerGroupSpecs"]
    ]


def test_the_rayjob_has_kuberays_structure() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(rayjob(), RAYJOB_SCHEMA)
    broken = rayjob()
    broken["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replica"] = 2  # a typo
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, RAYJOB_SCHEMA)


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_its_pod_templates_validate_against_the_kubernetes_schema(version: str) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    version = kv.latest_version() if version == "latest" else version
    for template in templates():
        doc = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "absa-bulk", "namespace": "absa"},
            "template": template,
        }
        try:
            kv.validate(doc, version, strict=True)
        except kv.utils.VersionNotSupportedError:
            pytest.skip(f"kubernetes-validate has no schemas for {version} any more")


def test_the_entrypoint_is_an_absa_ray_command_the_cluster_can_hold() -> None:
    argv = shlex.split(rayjob()["spec"]["entrypoint"])
    assert argv[0] == "absa"
    args = build_parser().parse_args(argv[1:])
    assert args.command == "predict" and args.engine == "ray"
    assert "://" in args.input and "://" in args.output  # object storage, not a pod's disk
    groups = rayjob()["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    cpus = sum(g["replicas"] * int(g["rayStartParams"]["num-cpus"]) for g in groups)
    pods = sum(g["replicas"] for g in groups)
    assert args.ray_workers <= cpus - pods, "one CPU per pod is left for read and write tasks"
    assert rayjob()["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"


def test_the_pods_run_the_bulk_image_at_the_clusters_ray_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    ray_image = dockerfile()[0]["RAY_IMAGE"]
    ray_version = rayjob()["spec"]["rayClusterSpec"]["rayVersion"]
    assert re.search(rf":{re.escape(ray_version)}-py311-", ray_image), ray_image
    (bound,) = [r for r in project["optional-dependencies"]["ray"] if r.startswith("ray[")]
    low = re.search(r">=([\d.]+)", bound)
    assert low and tuple(map(int, low.group(1).split("."))) <= tuple(
        map(int, ray_version.split("."))
    )
    for template in templates():
        (container,) = template["spec"]["containers"]
        assert container["image"] == f"absa-bulk:{project['version']}"
        assert container["securityContext"]["runAsUser"] == 1000  # the Ray image's user
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][bound])
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert {"/tmp", "/dev/shm"} <= set(mounts), "Ray's session dir and object store"
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"


def test_the_bulk_stage_installs_the_ray_extra_as_the_ray_user() -> None:
    bulk = stage("bulk")
    assert bulk.base == dockerfile()[0]["RAY_IMAGE"]
    assert [".[ray]"] in pip_calls(closure("bulk"), "install")
    assert bulk.last("USER") == "1000:100"
    assert list(dockerfile()[1])[-1] == "runtime"
