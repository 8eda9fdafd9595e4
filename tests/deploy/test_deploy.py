"""Deployment files agree with each other and with the app: the Dockerfile's stages,
.dockerignore, docker compose and the Kubernetes manifests (routes, port, settings,
images, volumes, install commands). Offline and fast; nothing is built or started."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S_BASE = DEPLOY / "k8s" / "base"
K8S_GPU = DEPLOY / "k8s" / "gpu"
SERVING_STAGES = ("runtime", "gpu")
K8S_VERSIONS = ("1.30.0", "latest")  # the oldest Kubernetes we claim, and the newest known


# ------------------------------------------------------------------------------ Dockerfile


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, instruction: str) -> list[str]:
        return [a for i, a in self.instructions if i == instruction]

    def last(self, instruction: str) -> str | None:
        found = self.args(instruction)
        return found[-1] if found else None

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for a in self.args("ENV"):
            for tok in shlex.split(a):
                key, _, value = tok.partition("=")
                out[key] = value
        return out


@cache
def dockerfile() -> tuple[dict[str, str], dict[str, Stage]]:
    """(global ARG defaults, stages by name in file order) of ROOT/Dockerfile."""
    lines, buf = [], ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        s = raw.strip()
        if not s or s.startswith("#"):
            continue  # comments and blank lines, also inside continuations
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        lines.append(buf + s)
        buf = ""
    assert not buf, "Dockerfile ends inside a line continuation"
    args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    for line in lines:
        instruction, _, rest = line.partition(" ")
        instruction, rest = instruction.upper(), rest.strip()
        if instruction == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].lower() == "as" else str(len(stages))
            base = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), parts[0])
            stages[name] = Stage(name, base)
        elif not stages:
            if instruction == "ARG":
                key, _, value = rest.partition("=")
                args[key] = value
        else:
            list(stages.values())[-1].instructions.append((instruction, rest))
    return args, stages


def stage(name: str) -> Stage:
    return dockerfile()[1][name]


def closure(name: str) -> list[Stage]:
    """The stage and every stage it is built FROM or COPYs --from."""
    stages = dockerfile()[1]
    seen: list[Stage] = []
    todo = [name]
    while todo:
        st = stages[todo.pop()]
        if st in seen:
            continue
        seen.append(st)
        if st.base in stages:
            todo.append(st.base)
        for a in st.args("COPY"):
            m = re.search(r"--from=(\S+)", a)
            if m and m.group(1) in stages:
                todo.append(m.group(1))
    return seen


def shell_commands(run: str) -> list[list[str]]:
    """A RUN line split into simple commands (on && || ; |), each as its words, leading
    VAR=value assignments dropped."""
    lex = shlex.shlex(run, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    commands: list[list[str]] = [[]]
    for tok in lex:
        if tok in ("&&", "||", ";", "|", "&"):
            commands.append([])
        elif commands[-1] or not re.match(r"^[A-Za-z_]\w*=", tok):
            commands[-1].append(tok)
    return [c for c in commands if c]


def pip_calls(stages: list[Stage], action: str) -> list[list[str]]:
    """The non-option arguments of every `pip ACTION ...` in the stages' RUN lines."""
    out = []
    for st in stages:
        for run in st.args("RUN"):
            for words in shell_commands(run):
                if "pip" in words and words[words.index("pip") + 1 :][:1] == [action]:
                    rest = words[words.index("pip") + 2 :]
                    out.append([w for w in rest if not w.startswith("-")])
    return out


def exec_form(args: str | None) -> list[str]:
    assert args and args.startswith("["), f"not in exec (JSON) form: {args!r}"
    return json.loads(args)


def healthcheck_command(st: Stage) -> list[str]:
    hc = st.last("HEALTHCHECK")
    assert hc and "CMD" in hc, f"stage {st.name} has no HEALTHCHECK CMD"
    return exec_form(hc[hc.index("CMD") + len("CMD") :].strip())


def exposed_port(st: Stage) -> int:
    (port,) = st.args("EXPOSE")
    return int(port.split("/")[0])


def uid_of(user: str | None) -> int:
    assert user, "no USER"
    uid = user.split(":")[0]
    assert uid.isdigit(), f"USER {user!r}: use a numeric uid so runAsNonRoot can verify it"
    return int(uid)


def test_stages_and_default_target():
    stages = dockerfile()[1]
    assert {"builder", "runtime", "gpu", "train"} <= set(stages)
    assert list(stages)[-1] == "runtime", "the last stage is what a plain `docker build` makes"
    assert stage("runtime").base == "python:3.11-slim"
    assert stage("gpu").base.startswith("nvidia/cuda:") and "cudnn-runtime" in stage("gpu").base


@pytest.mark.parametrize("name", ["runtime", "gpu", "train"])
def test_final_stages_run_as_non_root(name):
    assert uid_of(stage(name).last("USER")) > 0


def test_the_train_image_records_the_commit_it_was_built_from():
    """The tree travels without .git: the versions a job trains record the build argument
    (ABSA_CODE_VERSION), not "absa 0.1.0" for every commit."""
    st = stage("train")
    assert any(a.split("=")[0] == "ABSA_CODE_VERSION" for a in st.args("ARG"))
    assert st.env()["ABSA_CODE_VERSION"] == "${ABSA_CODE_VERSION}"
    assert (
        "--build-arg ABSA_CODE_VERSION=$(git rev-parse HEAD)"
        in (ROOT / "deploy" / "README.md").read_text()
    )


def test_serving_images_install_the_base_install_only():
    for name in SERVING_STAGES:
        installs = pip_calls(closure(name), "install")
        assert ["."] in installs, f'{name}: no `pip install "."`'
        targets = [t.lower() for call in installs for t in call]
        assert not [t for t in targets if "[train]" in t or "[dev]" in t or "torch" in t], name
        assert not pip_calls([stage(name)], "install"), f"{name}: install in the builder stage"


@pytest.mark.parametrize("name", ["runtime", "train", "bulk"])
def test_the_cpu_images_install_one_onnxruntime(name):
    """The retraining job's gate and parity check score a new version with the train image's
    onnxruntime, and bulk scoring serves it with the bulk image's: unpinned there, it was
    whatever PyPI had newest at build time, not the ORT_VERSION the runtime image serves it
    with."""
    (builder,) = [st for st in closure(name) if pip_calls([st], "install")]
    assert "ORT_VERSION" in builder.args("ARG"), f"{builder.name}: no ARG ORT_VERSION"
    (run,) = [r for r in builder.args("RUN") if '".[' in r and "pip install" in r]
    assert 'echo "onnxruntime==${ORT_VERSION}" > /tmp/constraints.txt' in run, run
    assert re.search(r"PIP_CONSTRAINT=/tmp/constraints\.txt (\S+=\S+ )*pip install", run), run


def test_gpu_image_swaps_in_onnxruntime_gpu():
    chain = closure("gpu")
    assert ["onnxruntime"] in pip_calls(chain, "uninstall")
    installs = [t for call in pip_calls(chain, "install") for t in call]
    assert any(t.startswith("onnxruntime-gpu") for t in installs)
    assert stage("gpu").env().get("ABSA_DEVICE") in ("cuda", "auto")


def test_serving_stages_share_entry_point_healthcheck_and_port():
    cpu, gpu = stage("runtime"), stage("gpu")
    assert exec_form(cpu.last("ENTRYPOINT")) == exec_form(gpu.last("ENTRYPOINT"))
    assert cpu.last("HEALTHCHECK") == gpu.last("HEALTHCHECK")
    assert exposed_port(cpu) == exposed_port(gpu) == 8000
    for st in (cpu, gpu):
        assert st.env()["ABSA_PORT"] == str(exposed_port(st))
        assert st.env()["ABSA_HOST"] == "0.0.0.0"
        assert "ABSA_MODEL_DIR" not in st.env(), "the image serves the model in the package"


def test_entry_point_is_absa_serve():
    """Both serving images start the server the one way the project knows: `absa serve`,
    which reads the ABSA_* variables the stages set (a flag given as CMD overrides one)."""
    from absa.cli import build_parser

    for name in ("runtime", "gpu"):
        st = stage(name)
        assert exec_form(st.last("ENTRYPOINT")) == ["absa", "serve"], name
        assert exec_form(st.last("CMD")) == []
    args = build_parser().parse_args(["serve", "--workers", "2"])
    assert args.command == "serve" and args.workers == 2


def test_healthcheck_probes_healthz_and_fails_when_it_does():
    """Run the image's HEALTHCHECK command against a stub server: 200 -> 0, 503 -> not 0."""
    cmd = healthcheck_command(stage("runtime"))
    assert cmd[:2] == ["python", "-c"] and "/healthz" in cmd[2]
    status = {"code": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(status["code"] if self.path == "/healthz" else 404)
            self.end_headers()

        def log_message(self, *args):  # keep pytest's output clean
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "ABSA_PORT": str(server.server_port)}
    try:
        run = [sys.executable, *cmd[1:]]
        assert subprocess.run(run, env=env, capture_output=True, timeout=30).returncode == 0
        status["code"] = 503
        assert subprocess.run(run, env=env, capture_output=True, timeout=30).returncode != 0
    finally:
        server.shutdown()


def test_train_image_runs_absa_retrain():
    installs = pip_calls(closure("train"), "install")
    assert [".[train]"] in installs
    st = stage("train")
    assert exec_form(st.last("ENTRYPOINT")) == ["absa"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["absa"] == "absa.cli:main"
    cmd = exec_form(st.last("CMD"))
    assert cmd == ["retrain", "--config", "/config/retrain.toml"]
    from absa.cli import build_parser

    args = build_parser().parse_args(cmd)  # exits (fails the test) if the CLI lost it
    assert args.command == "retrain" and args.config == "/config/retrain.toml"


def test_the_build_checks_the_default_model_is_installed():
    builder_checks = " ".join(stage("builder").args("RUN"))
    assert "DEFAULT_MODEL_DIR" in builder_checks, "the build checks the model is installed"


# ------------------------------------------------------------------------------ .dockerignore


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [s for s in (line.strip() for line in lines) if s and not s.startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            j = pattern.index("]", i)
            out, i = out + pattern[i : j + 1], j + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def ignored(path: str) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matching a directory
    excludes everything under it."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    result = False
    for pattern in dockerignore_patterns():
        negate = pattern.startswith("!")
        rx = _pattern_regex(os.path.normpath(pattern.lstrip("!").strip("/")))
        if any(rx.match(p) for p in prefixes):
            result = not negate
    return result


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "README.md",
        "model/runtime.py",
        "model/artifacts/default/model.onnx",
        "model/artifacts/default/metadata.json",
        "service/app.py",
        "service/routes/ops.py",
        "training/retrain.py",
    ],
)
def test_dockerignore_keeps_what_the_install_needs(path):
    assert not ignored(path)


@pytest.mark.parametrize(
    "path",
    [
        ".git/HEAD",
        ".venv/bin/python",
        "tests/deploy/test_deploy.py",
        "runs/rest-fast/metrics.json",
        "artifacts/rest-fast/model.onnx",
        "models/versions/v1/model.onnx",
        "benchmarks/results/accuracy.json",
        "docs/results.md",
        "model/__pycache__/runtime.cpython-311.pyc",
        ".pytest_cache/v/cache/nodeids",
        ".hypothesis/examples/0a1b/2c3d",
        ".whl/pydantic-2.14.4-py3-none-any.whl",
        "absa.egg-info/PKG-INFO",
    ],
)
def test_dockerignore_keeps_the_rest_out(path):
    assert ignored(path)


def test_copied_sources_exist_and_are_in_the_context():
    for st in dockerfile()[1].values():
        for a in st.args("COPY"):
            if a.startswith("--from"):
                continue
            *sources, _dest = [t for t in a.split() if not t.startswith("--")]  # --chown
            for src in sources:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
                assert not ignored(src), f"COPY {src}: excluded by .dockerignore"


# ------------------------------------------------------------------------------ YAML files


def load_yaml(path: Path) -> list[dict]:
    yaml = pytest.importorskip("yaml")
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


@cache
def compose() -> dict:
    (doc,) = load_yaml(DEPLOY / "docker-compose.yml")
    return doc


def k8s(kind: str, name: str | None = None, docs: tuple | None = None) -> dict:
    docs = docs or tuple(d for p in sorted(K8S_BASE.glob("*.yaml")) for d in load_yaml(p))
    found = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''}"
    return found[0]


def with_component(
    overlay: Path, component: Path, tmp_path: Path, **more: object
) -> tuple[dict, ...]:
    """``overlay`` with ``component`` (and ``more`` of a kustomization), rendered by
    ``kubectl kustomize`` as a user's overlay adds them (kustomize takes relative paths
    only); skipped without kubectl."""
    import shutil
    import subprocess

    yaml = pytest.importorskip("yaml")
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl is not installed")
    mine = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(overlay, tmp_path)],
        "components": [os.path.relpath(component, tmp_path)],
        **more,
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(mine))
    out = subprocess.run([kubectl, "kustomize", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return tuple(d for d in yaml.safe_load_all(out.stdout) if d)


def pod_spec(workload: dict) -> dict:
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]


def only_container(workload: dict) -> dict:
    (container,) = pod_spec(workload)["containers"]
    return container


def container_port(container: dict, port: int | str) -> int:
    if isinstance(port, int):
        return port
    (found,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return found


@pytest.mark.parametrize(
    "path",
    sorted(p.relative_to(ROOT) for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml")),
    ids=str,
)
def test_every_yaml_file_parses(path):
    assert load_yaml(ROOT / path)


def test_kustomization_lists_every_manifest():
    (kust,) = load_yaml(K8S_BASE / "kustomization.yaml")
    manifests = {p.name for p in K8S_BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kust["resources"]) == manifests


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_manifests_validate_against_the_kubernetes_schema(version):
    kv = pytest.importorskip("kubernetes_validate")
    version = kv.latest_version() if version == "latest" else version
    (kust,) = load_yaml(K8S_BASE / "kustomization.yaml")
    for name in kust["resources"]:
        for doc in load_yaml(K8S_BASE / name):
            try:
                kv.validate(doc, version, strict=True)
            except kv.utils.VersionNotSupportedError:
                pytest.skip(f"kubernetes-validate has no schemas for {version} any more")


@pytest.mark.parametrize("overlay", [K8S_BASE, K8S_GPU], ids=lambda p: p.name)
def test_rendered_overlays_validate(overlay):
    """`kubectl kustomize` (offline) renders each overlay; the result validates too."""
    kv = pytest.importorskip("kubernetes_validate")
    yaml = pytest.importorskip("yaml")
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl is not installed")
    out = subprocess.run(
        [kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    docs = tuple(d for d in yaml.safe_load_all(out.stdout) if d)
    for doc in docs:
        kv.validate(doc, kv.latest_version(), strict=True)
    deployment = k8s("Deployment", "absa", docs)
    container = only_container(deployment)
    surge = deployment["spec"]["strategy"]["rollingUpdate"]
    if overlay == K8S_GPU:  # a surge pod would wait for a GPU the HPA's maximum holds
        assert (surge["maxSurge"], surge["maxUnavailable"]) == (0, 1)
    else:
        assert (surge["maxSurge"], surge["maxUnavailable"]) == (1, 0)
    # the HPA owns the count: a Deployment's own replicas would reset it on every apply; and
    # with a rollout or a drain taking one pod down at a time, one replica would be none
    assert "replicas" not in deployment["spec"]
    assert k8s("HorizontalPodAutoscaler", "absa", docs)["spec"]["minReplicas"] >= 2
    if overlay == K8S_GPU:
        assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
        assert {"name": "ABSA_DEVICE", "value": "cuda"} in container["env"]
        assert container["image"] == compose_gpu_image()


# ------------------------------------------------------------------------------ Kubernetes


def routes() -> set[str]:
    from absa.service.routes import ops

    return {r.path for r in ops.router.routes}


def test_probes_hit_real_routes_on_the_container_port():
    deployment = k8s("Deployment", "absa")
    container = only_container(deployment)
    expected = {
        "readinessProbe": "/readyz",
        "livenessProbe": "/healthz",
        "startupProbe": "/healthz",
    }
    for probe, path in expected.items():
        get = container[probe]["httpGet"]
        assert get["path"] == path and path in routes()
        assert container_port(container, get["port"]) == exposed_port(stage("runtime"))
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] in routes()
    assert int(annotations["prometheus.io/port"]) == exposed_port(stage("runtime"))


def test_service_hpa_pdb_and_network_policy_point_at_the_deployment():
    deployment = k8s("Deployment", "absa")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    container = only_container(deployment)
    service = k8s("Service", "absa")
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == 80
    assert container_port(container, port["targetPort"]) == 8000
    hpa = k8s("HorizontalPodAutoscaler", "absa")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": deployment["apiVersion"],
        "kind": "Deployment",
        "name": "absa",
    }
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert k8s("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    policy = k8s("NetworkPolicy", "absa-server")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    (rule,) = policy["spec"]["ingress"]
    assert [container_port(container, p["port"]) for p in rule["ports"]] == [8000]
    # and they open no connections: Egress listed with no rule allows none
    assert "Egress" in policy["spec"]["policyTypes"] and policy["spec"]["egress"] == []


@pytest.mark.parametrize("name", ["runtime", "gpu", "train", "bulk"])
def test_final_stages_turn_onnxruntime_telemetry_off(name):
    """onnxruntime otherwise sends usage events to Microsoft and keeps a device id under $HOME."""
    assert stage(name).env().get("ORT_DISABLE_TELEMETRY") == "1"


@pytest.mark.parametrize("kind", ["Deployment", "CronJob"])
def test_pods_are_locked_down_and_sized(kind):
    workload = k8s(kind)
    pod = pod_spec(workload)
    image_stage = "runtime" if kind == "Deployment" else "train"
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == uid_of(stage(image_stage).last("USER"))
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    container = only_container(workload)
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["runAsNonRoot"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    for bound in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][bound])
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/tmp" in mounts, "a read-only root needs a writable /tmp"


def setting_names() -> frozenset[str]:
    """The ABSA_* names pydantic-settings reads (absa.settings.setting_variables)."""
    from absa.settings import setting_variables

    return setting_variables()


def test_configmap_holds_real_settings_and_the_container_port():
    fields = setting_names()
    assert "ABSA_PROMETHEUS_MULTIPROC_DIR" not in fields and "ABSA_EXTRACTOR" in fields
    config = k8s("ConfigMap", "absa-config")["data"]
    assert set(config) <= fields, f"not settings: {set(config) - fields}"
    assert config["ABSA_PORT"] == "8000" and config["ABSA_HOST"] == "0.0.0.0"
    assert config["ABSA_WORKERS"] == "1", "scale pods, not workers, under an HPA"
    container = only_container(k8s("Deployment", "absa"))
    assert {"configMapRef": {"name": "absa-config"}} in container["envFrom"]
    for st in SERVING_STAGES:
        assert {k for k in stage(st).env() if k.startswith("ABSA_")} <= fields
    service = compose()["services"]["absa"]
    assert {k for k in service["environment"] if k.startswith("ABSA_")} <= fields


#: settings a deployment sets to other than the code's default, each on purpose: serve the
#: registry, listen beyond the container, pick the device and threads the pod is given, extract
#: aspects for requests without them, log JSON for a collector; empty key and token (compose's
#: default) are the features off, as unset
DEPLOYED_ON_PURPOSE = frozenset(
    {
        "ABSA_REGISTRY",
        "ABSA_HOST",
        "ABSA_DEVICE",
        "ABSA_THREADS",
        "ABSA_EXTRACTOR",
        "ABSA_LOG_FORMAT",
        "ABSA_API_KEY",
        "ABSA_ADMIN_TOKEN",
    }
)


def _setting(name: str, value: object = None) -> object:
    from absa.settings import Settings

    field = name.removeprefix("ABSA_").lower()
    if value is None:
        return Settings.model_fields[field].get_default(call_default_factory=True)
    return getattr(Settings.model_validate({field: value}), field)


def test_deployments_keep_the_codes_defaults_but_where_they_mean_to_differ():
    """A tuned default (the batch fill wait went 2 ms -> 0 once measured) stayed behind in
    compose and the ConfigMap, which set it to the old value: every install paid 2 ms."""
    compose_env = compose()["services"]["absa"]["environment"]
    deployed = {
        "the ConfigMap": k8s("ConfigMap", "absa-config")["data"],
        "docker-compose.yml": {  # ${NAME:-default}, ${NAME-default}: the value when unset
            k: re.sub(r"^\$\{\w+:?-(.*)\}$", r"\1", str(v))
            for k, v in compose_env.items()
            if k.startswith("ABSA_")
        },
        **{
            f"the {st} image": {k: v for k, v in stage(st).env().items() if k.startswith("ABSA_")}
            for st in SERVING_STAGES
        },
    }
    differ = [
        f"{where}: {name}={value!r}, the code's default {_setting(name)!r}"
        for where, env in deployed.items()
        for name, value in env.items()
        if name not in DEPLOYED_ON_PURPOSE and _setting(name, value) != _setting(name)
    ]
    assert not differ, differ


#: ABSA_* names that are docker compose's own variables (interpolated into the compose file),
#: not settings: the host directory of the training data and the host port
#: (listed in settings.py's OTHER_VARIABLES: no command warns of them)
COMPOSE_VARIABLES = frozenset({"ABSA_RETRAIN_DATA", "ABSA_PUBLISH_PORT"})
_ABSA_NAME = re.compile(r"\bABSA_[A-Z0-9_]*[A-Z0-9]\b")


def deployment_texts() -> dict[str, str]:
    """Every file a deployment reads or a user copies names from: the Dockerfile, deploy/
    (compose, manifests, overlays, the RayJob, configs, its README) and README.md's
    Deployment section."""
    texts = {"Dockerfile": (ROOT / "Dockerfile").read_text()}
    for p in sorted(DEPLOY.rglob("*")):
        if p.is_file() and p.suffix in (".yaml", ".yml", ".md", ".toml"):
            texts[str(p.relative_to(ROOT))] = p.read_text()
    readme = (ROOT / "README.md").read_text()
    section = re.search(r"^## Deployment\n(.*?)(?=^## )", readme, re.S | re.M)
    assert section, "README.md has a Deployment section"
    texts["README.md#deployment"] = section.group(1)
    return texts


def unknown_settings(text: str) -> set[str]:
    """The ABSA_* names in ``text`` that are neither a setting nor a compose variable: a
    typo there is ignored by pydantic-settings (extra="ignore"), silently."""
    return set(_ABSA_NAME.findall(text)) - setting_names() - COMPOSE_VARIABLES


def test_every_absa_name_in_the_deployment_files_is_a_setting():
    """Not only the ConfigMap: the CronJob's and the RayJob's env, the GPU overlay's patch,
    compose's services and override, and the docs users copy from."""
    assert unknown_settings("ABSA_RELOAD_INTERVAL: 30  # ABSA_REGISTRY=/models") == {
        "ABSA_RELOAD_INTERVAL"
    }  # the check itself sees a typo
    found = {name: unknown_settings(text) for name, text in deployment_texts().items()}
    assert not {k: v for k, v in found.items() if v}, "not settings (silently ignored)"
    # a compose variable interpolated into a setting has the setting's name: a typo there
    # would drop what the user exported for the default, silently too
    for path in sorted(DEPLOY.glob("docker-compose*.yml")):
        for doc in load_yaml(path):
            for svc, service in doc["services"].items():
                for key, value in (service.get("environment") or {}).items():
                    for var in re.findall(r"\$\{(\w+)", str(value)):
                        assert var == key, f"{path.name} {svc}: {key} reads ${{{var}}}"
    # and the compose variables are compose's: each one is interpolated somewhere
    compose_text = "".join(p.read_text() for p in DEPLOY.glob("docker-compose*.yml"))
    for var in COMPOSE_VARIABLES:
        assert "${" + var in compose_text, var
    from absa.settings import OTHER_VARIABLES

    assert COMPOSE_VARIABLES <= OTHER_VARIABLES


# ------------------------------------------------------------------------------ models volume


def mount(container: dict, pod: dict, path: str) -> tuple[dict, dict]:
    (m,) = [m for m in container["volumeMounts"] if m["mountPath"] == path]
    (v,) = [v for v in pod["volumes"] if v["name"] == m["name"]]
    return m, v


def test_server_and_retraining_share_the_models_volume():
    deployment, cronjob = k8s("Deployment", "absa"), k8s("CronJob", "absa-retrain")
    registry = k8s("ConfigMap", "absa-config")["data"]["ABSA_REGISTRY"]
    assert registry == compose()["services"]["absa"]["environment"]["ABSA_REGISTRY"] == "/models"
    retrain_cfg = tomllib.loads((ROOT / "deploy" / "config" / "retrain.toml").read_text())
    assert retrain_cfg["registry"] == registry  # the job writes where the service reads
    server_mount, server_volume = mount(only_container(deployment), pod_spec(deployment), "/models")
    job_mount, job_volume = mount(only_container(cronjob), pod_spec(cronjob), "/models")
    claim = server_volume["persistentVolumeClaim"]["claimName"]
    assert claim == job_volume["persistentVolumeClaim"]["claimName"]
    assert server_mount["readOnly"] is True and not job_mount.get("readOnly", False)
    pvc = k8s("PersistentVolumeClaim", claim)
    assert "ReadWriteMany" in pvc["spec"]["accessModes"]
    services = compose()["services"]
    assert "models:/models:ro" in services["absa"]["volumes"]
    assert "models:/models" in services["retrain"]["volumes"]
    assert "models" in compose()["volumes"]


def test_retraining_job_matches_the_train_image():
    cronjob = k8s("CronJob", "absa-retrain")
    container = only_container(cronjob)
    cmd = exec_form(stage("train").last("CMD"))
    assert container["args"] == cmd
    assert compose()["services"]["retrain"]["command"] == cmd
    assert compose()["services"]["retrain"]["profiles"] == ["retrain"]
    config_path = Path(cmd[cmd.index("--config") + 1])
    _m, volume = mount(container, pod_spec(cronjob), str(config_path.parent))
    config_map = k8s("ConfigMap", volume["configMap"]["name"])
    local = DEPLOY / "config" / config_path.name
    assert f"./config:{config_path.parent}:ro" in compose()["services"]["retrain"]["volumes"]
    assert config_map["data"][config_path.name] == local.read_text()
    config = tomllib.loads(local.read_text())
    assert config["registry"] == "/models"
    data_paths = [*config["data"].get("base", []), *config["data"].get("new", [])]
    assert all(p.startswith("/data/") for p in [*data_paths, *config["eval"].values()])
    _m, data = mount(container, pod_spec(cronjob), "/data")
    assert data["persistentVolumeClaim"]["readOnly"] is True


def test_retrain_config_loads():
    from absa.training.retrain import RetrainConfig

    cfg = RetrainConfig.load(DEPLOY / "config" / "retrain.toml")
    assert str(cfg.registry) == "/models"


def test_the_example_retrain_config_names_every_key() -> None:
    """The one example config is where a user learns the job's keys: each one is set or
    shown commented out (`# epochs = 20`, valid TOML once uncommented), in its table; a key
    added to the job and not here fails (epochs, baseline and drift_threshold were missing)."""
    import dataclasses
    import re

    from absa.training.retrain_config import Gate, RetrainConfig

    text = (DEPLOY / "config" / "retrain.toml").read_text()
    named: dict[str, set[str]] = {"": set()}
    table = ""
    for line in text.splitlines():
        if m := re.fullmatch(r"\[(\w+)\]", line):
            table = m[1]
            named.setdefault(table, set())
        elif m := re.fullmatch(r"(?:# )?(\w+) = .*", line):
            tomllib.loads(line.removeprefix("# "))  # a value as TOML takes it
            named[table].add(m[1])
    tables = {"data": {"base", "new", "dev"}, "eval": set(), "gate": set()}
    top = {f.name for f in dataclasses.fields(RetrainConfig)} - {"source", *tables}
    assert named[""] == top - {"base", "new", "dev"}
    assert named["data"] == tables["data"] and named["eval"] == {"test"}
    assert named["gate"] == {f.name for f in dataclasses.fields(Gate)}


# ------------------------------------------------------------------------------ images


def image_tag(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":")
    return name, tag


def compose_gpu_image() -> str:
    (override,) = load_yaml(DEPLOY / "docker-compose.gpu.yml")
    return override["services"]["absa"]["image"]


def test_images_agree_across_dockerfile_compose_and_kubernetes():
    services = compose()["services"]
    (override,) = load_yaml(DEPLOY / "docker-compose.gpu.yml")
    by_target = {
        services["absa"]["build"]["target"]: services["absa"]["image"],
        services["retrain"]["build"]["target"]: services["retrain"]["image"],
        override["services"]["absa"]["build"]["target"]: override["services"]["absa"]["image"],
    }
    assert set(by_target) == {"runtime", "train", "gpu"}
    assert set(by_target) <= set(dockerfile()[1])
    for svc in services.values():  # the project's images (the monitoring profile's are pulled)
        if "build" in svc:
            assert (DEPLOY / svc["build"]["context"]).resolve() == ROOT
    assert only_container(k8s("Deployment", "absa"))["image"] == by_target["runtime"]
    assert only_container(k8s("CronJob", "absa-retrain"))["image"] == by_target["train"]
    (gpu,) = load_yaml(K8S_GPU / "kustomization.yaml")
    (rename,) = gpu["images"]
    name, tag = image_tag(by_target["runtime"])
    assert rename["name"] == name and f"{rename['newName']}:{tag}" == by_target["gpu"]
    assert len({image_tag(i)[1] for i in by_target.values()}) == 1, "one tag for all images"
    (rayjob,) = load_yaml(DEPLOY / "k8s" / "ray" / "rayjob.yaml")  # bulk scoring on KubeRay
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    (container,) = head["spec"]["containers"]
    by_target["bulk"] = container["image"]
    assert image_tag(by_target["bulk"])[1] == tag
    readme = (DEPLOY / "README.md").read_text()
    builds = re.findall(r"docker build (?:--target (\S+) )?-t (\S+) \.", readme)
    assert builds, "deploy/README.md shows the docker build commands"
    for target, image in builds:
        assert by_target[target or "runtime"] == image


def _bytes(quantity: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    return int(quantity[:-2]) * units[quantity[-2:]] if quantity[-2:] in units else int(quantity)


def test_ray_object_stores_fit_their_shared_memory():
    """Ray puts an object store bigger than /dev/shm on /tmp (disk) and says it will "harm
    performance": each group's store is sized to fit its memory-backed /dev/shm."""
    (rayjob,) = load_yaml(DEPLOY / "k8s" / "ray" / "rayjob.yaml")
    spec = rayjob["spec"]["rayClusterSpec"]
    for group in (spec["headGroupSpec"], *spec["workerGroupSpecs"]):
        store = int(group["rayStartParams"]["object-store-memory"])
        pod = group["template"]["spec"]
        (shm,) = [v for v in pod["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory"]
        (container,) = pod["containers"]
        assert any(m["mountPath"] == "/dev/shm" for m in container["volumeMounts"])
        assert store <= _bytes(shm["emptyDir"]["sizeLimit"])
        assert store < _bytes(container["resources"]["limits"]["memory"]) // 2


def test_compose_service_port_and_healthcheck():
    service = compose()["services"]["absa"]
    assert any(p.endswith(f":{exposed_port(stage('runtime'))}") for p in service["ports"])
    assert service["healthcheck"]["test"] == ["CMD", *healthcheck_command(stage("runtime"))]
    assert service["environment"]["ABSA_PORT"] == "8000"
    assert service["read_only"] is True and "/tmp" in service["tmpfs"]


def readme_section(title: str) -> str:
    """A ``## title`` section of deploy/README.md."""
    text = (DEPLOY / "README.md").read_text()
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert found, f"deploy/README.md has no section {title!r}"
    return found.group(1)


def test_compose_passes_the_secret_settings_from_the_shell(monkeypatch):
    """The secrets the Deployment reads from optional Secrets (ABSA_API_KEY, ABSA_ADMIN_TOKEN)
    come from the shell under compose, as deploy/README.md's compose section uses them
    (`POST /admin/reload` with the admin token); unset in the shell, each is empty: off."""
    from absa.service.app import create_app
    from absa.settings import SECRET_FIELDS, Settings

    env = compose()["services"]["absa"]["environment"]
    for name in sorted(SECRET_FIELDS):
        var = f"ABSA_{name.upper()}"
        assert env.get(var) == f"${{{var}:-}}", f"compose does not pass {var} from the shell"
        monkeypatch.setenv(var, "")  # what compose passes where the shell has none
    section = readme_section("One machine: docker compose")
    assert "/admin/reload" in section and "ABSA_ADMIN_TOKEN" in section, "how to turn it on"
    settings = Settings()
    assert settings.api_keys() == ()
    assert getattr(create_app(settings).state, "admin", False) is False


def test_registry_paths_in_the_deployment_files_are_the_registry_s():
    """A path under the registry's mount that a deployment file names is one the registry
    has (model/registry.py): the pointer is the file CURRENT, there is no /models/current."""
    from absa.model.registry import POINTER, Registry

    registry = k8s("ConfigMap", "absa-config")["data"]["ABSA_REGISTRY"]
    reg = Registry(registry)
    layout = {reg.versions_dir.name, reg.work_dir.name, POINTER, "history.jsonl", "reports"}
    layout |= {".lock", ".job.lock"}
    named = re.compile(rf"(?<![\w.-]){re.escape(registry)}/([\w.-]*\w)")
    found = {
        f"{name}: {registry}/{part}"
        for name, text in deployment_texts().items()
        for part in named.findall(text)
        if part not in layout
    }
    assert not found, "not in the registry's layout"


def test_retrain_exit_statuses_fit_the_job_s_failure_policy():
    """`absa retrain` exits 0 (promoted), 3 (not promoted), 2 (bad configuration or data, a
    registry locked by another job) or 75 (EX_TEMPFAIL: an I/O error a second try may not
    meet). The CronJob's Jobs fail at once on 2 and 3 (a rerun does the same) and retry the
    rest, 75 among them; the compose section, whose `run --rm retrain` a cron line or CI
    runs, names all four."""
    from absa.cli.common import EX_TEMPFAIL

    cronjob = k8s("CronJob", "absa-retrain")
    job = cronjob["spec"]["jobTemplate"]["spec"]
    assert pod_spec(cronjob)["restartPolicy"] == "Never"  # what podFailurePolicy needs
    rule, evicted = job["podFailurePolicy"]["rules"]
    # a pod evicted (a node drained) stops after a batch with its checkpoint, exit 75: the
    # retry goes on from it, and the eviction does not count against backoffLimit
    assert evicted["action"] == "Ignore"
    assert evicted["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert rule["action"] == "FailJob"
    codes = rule["onExitCodes"]
    assert codes["containerName"] == only_container(cronjob)["name"]
    assert codes["operator"] == "In" and sorted(codes["values"]) == [2, 3]
    assert job["backoffLimit"] >= 1, f"{EX_TEMPFAIL} asks for another try"
    section = readme_section("One machine: docker compose")
    bullets = [" ".join(p.split()) for p in section.split("\n- ")]  # each on one line
    (line,) = [p for p in bullets if "exits 0 when it promoted" in p]
    for status in (0, 2, 3, EX_TEMPFAIL):
        assert re.search(rf"\b{status}\b", line), f"exit status {status} not explained"


# ------------------------------------------------------------------------------ README


def test_readme_serving_install_command_is_the_dockerfile_s():
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"pip install \.$", readme, re.MULTILINE)
    assert found, "README.md must show the serving install (pip install .)"
    words = [w for w in shlex.split(found.group(0)) if not w.startswith("-")]
    assert words[2:] in pip_calls(closure("runtime"), "install"), found.group(0)


def test_ci_builds_the_image_and_runs_it():
    """.ci/run builds the runtime image and proves it serves (issue #13, item 23): with the
    buildah-based image-check where no Docker engine is present, after the tests pass."""
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [line for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    check = [i for i, line in enumerate(steps) if "../shared/tools/image-check runtime" in line]
    tests = [i for i, line in enumerate(steps) if "python -m pytest" in line]
    assert check, ".ci/run never runs ../shared/tools/image-check"
    assert tests and check[0] > tests[0], "the image is checked after the tests"
    assert any("docker build" in line and "--target runtime" in line for line in steps)
    # the pytest exit status is kept: a failing test run never reaches the image check
    assert '[ "$rc" -eq 0 ] || exit "$rc"' in ci
