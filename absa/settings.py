"""Settings: the one reader of the environment. Every ``ABSA_*`` variable is a field here
(the CLI's flags override them); nothing else in the project reads ``os.environ``, but
for the few names in ``OTHER_VARIABLES``. Pydantic-settings ignores any other ABSA_* name:
``warn_unknown_variables`` says so (each command, at its start)."""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import AliasChoices, BeforeValidator, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger(__name__)

#: a web origin: http(s)://host[:port], the host a name, IPv4 or [IPv6] address
_ORIGIN = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?")


def _listed(value: str) -> list[str]:
    """The items of a comma-separated setting, stripped, empty ones left out."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _keys(value: SecretStr | None) -> list[str]:
    return _listed(value.get_secret_value()) if value is not None else []


def _origins(value: str) -> list[str]:
    """The origins listed, as a browser writes its Origin header: scheme and host in lower
    case, no default port ("https://App.Example.com:443" matched no request)."""
    return [_as_sent(origin.rstrip("/")) for origin in _listed(value)]


_DEFAULT_PORT = {"http": "80", "https": "443"}


def _as_sent(origin: str) -> str:
    match = re.fullmatch(
        r"([A-Za-z][A-Za-z0-9+.-]*)://([^/:\[\]]+|\[[^\]]*\])(?::([0-9]+))?", origin
    )
    if match is None:  # refused by the check as no origin ("*" aside)
        return origin
    scheme, host, port = match.group(1).lower(), match.group(2).lower(), match.group(3)
    if port is None or port == _DEFAULT_PORT.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _home(value: object) -> object:
    """A path's ``~`` or ``~user`` expanded: an environment file or a unit has no shell to
    do it (a path that starts otherwise, and the words 'shipped' and 'off', pass as given)."""
    if isinstance(value, str | os.PathLike) and os.fspath(value).startswith("~"):
        return Path(os.path.expanduser(os.fspath(value)))
    return value


def _blank_is_unset(value: object) -> object:
    """An empty path (``ABSA_EXTRACTOR=``, a unit's or compose's empty default) is no path:
    as Path('') it was the working directory, then "not a model artifact"."""
    return None if isinstance(value, str) and not value.strip() else value


def _keyword(word: str) -> BeforeValidator:
    """``Shipped`` or `` OFF `` is the word ``word`` unless a path of that name exists: a
    keyword in the wrong case was read as a path, then "no such model directory"."""

    def check(value: object) -> object:
        if isinstance(value, str) and value.strip().lower() == word and not Path(value).exists():
            return word
        return value

    return BeforeValidator(check)


#: a path setting, ``~`` expanded
UserPath = Annotated[Path, BeforeValidator(_home)]
#: an optional path setting: empty is unset
MaybePath = Annotated[UserPath | None, BeforeValidator(_blank_is_unset)]


CONFIG = SettingsConfigDict(
    env_prefix="ABSA_",
    extra="ignore",
    protected_namespaces=(),
    populate_by_name=True,
    hide_input_in_errors=True,  # a traceback never shows a value: ABSA_API_KEY is secret
)


class LogSettings(BaseSettings):
    """The logging settings: every command reads these (and only these) to set up its log,
    before it reads the rest, so a bad value elsewhere does not change how that is said."""

    model_config = CONFIG

    log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = Field(
        "info",
        description="the logging level: the server's (uvicorn's and the project's loggers) and "
        "every command's (`absa -v`: debug)",
    )
    log_format: Literal["text", "json"] = Field(
        "text",
        description="log lines as text, or one JSON object each (time, level, logger, "
        "process, message) for a log collector: the server's, and every command's",
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value


class ModelSettings(BaseSettings):
    """The settings that say which model (and extractor) to load: all ``absa.load`` reads,
    so that a server's setting with a bad value does not stop a script from loading one."""

    model_config = CONFIG

    model_dir: MaybePath = Field(
        None, description="artifact directory (default: the shipped model)"
    )
    registry: MaybePath = Field(None, description="serve the registry's current version instead")
    extractor: Annotated[MaybePath | Literal["shipped"], _keyword("shipped")] = Field(
        None,
        # the prefixed names only: an alias is matched as it is, and a bare EXTRACTOR in a
        # container's environment must not choose the service's extractor
        validation_alias=AliasChoices("ABSA_EXTRACTOR", "ABSA_EXTRACTOR_DIR"),
        description="an aspect extractor artifact (or 'shipped': the one in the package): "
        "requests without aspects get theirs extracted; unset: such requests are refused",
    )

    def extractor_path(self) -> Path | None:
        """The extractor artifact to load, or None (no extraction)."""
        if self.extractor == "shipped":
            from absa.model.extractor import DEFAULT_EXTRACTOR_DIR

            return DEFAULT_EXTRACTOR_DIR
        return self.extractor

    def model_path(self) -> Path:
        """The artifact to serve now: the registry's current version if it has one, else
        model_dir, else the shipped model."""
        from absa.errors import RegistryError
        from absa.model.registry import POINTER, Registry
        from absa.model.runtime import DEFAULT_MODEL_DIR

        if self.registry is not None:
            if not Path(self.registry).is_dir():  # a typo must not serve the fallback quietly
                raise RegistryError(
                    f"registry {self.registry} is not a directory (ABSA_REGISTRY, --registry)"
                )
            reg = Registry(self.registry)
            pointer = reg.root / POINTER
            if not (reg.looks_like(reg.root) or pointer.exists() or pointer.is_symlink()):
                _check_fresh(reg.root)  # a CURRENT of any kind: the registry says what is wrong
            elif reg.current() is not None:
                return reg.current_path()
            # an empty registry (before the first promotion) serves the fallback model
        return self.model_dir or DEFAULT_MODEL_DIR


def _check_fresh(root: Path) -> None:
    """A folder given as the registry that is not one yet must be empty (a fresh volume
    before the first promotion; lost+found and hidden entries aside): an artifact or a
    folder of something else there is a mistake, not a registry to wait for."""
    from absa.errors import RegistryError, first_few
    from absa.model.artifact import is_artifact
    from absa.model.registry import volume_entry

    if is_artifact(root):
        raise RegistryError(
            f"registry {root} is a model artifact, not a registry: serve it with "
            "ABSA_MODEL_DIR (--model) instead"
        )
    try:
        found = sorted(p.name for p in root.iterdir() if not volume_entry(p.name))
    except OSError as e:
        raise RegistryError(f"registry {root} cannot be listed: {e.strerror or e}") from None
    if found:
        raise RegistryError(
            f"registry {root} is not a model registry (no CURRENT and no versions/) and "
            f"not empty: it holds {first_few(found)} (ABSA_REGISTRY, --registry)"
        )


class OfflineSettings(ModelSettings):
    """The settings the commands that start no server read (predict, evaluate, train,
    retrain, models): a server-only setting with a bad value (ABSA_PORT=abc) is for
    ``absa serve`` to refuse, and failed them, which never read it."""

    category_model: MaybePath = Field(
        None,
        description="an aspect-category artifact served next to the term model: /v1/predict "
        "with categories instead of aspects (default: none, categories refused)",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description="where onnxruntime runs the model: auto (a CUDA GPU where onnxruntime "
        "has one), cpu, or cuda (refused where there is none)",
    )
    threads: int = Field(
        0,
        ge=0,
        description="onnxruntime intra-op threads of each absa serve worker, and of absa "
        "predict; 0 = the CPUs this process may use (its CPU affinity, and a cgroup CPU "
        "quota: docker --cpus, a Kubernetes CPU limit), shared out among the workers",
    )
    # training
    teacher_cache: Annotated[MaybePath | Literal["off"], _keyword("off")] = Field(
        None,
        description="where distillation keeps a teacher's probabilities, by teacher and "
        "examples, so students of other seeds or presets do not score them again (default: "
        "~/.cache/absa/teacher; 'off': no cache)",
    )
    # provenance
    code_version: str | None = Field(
        None,
        description="recorded as the code version of training runs where the source tree "
        "travels without .git (git's commit wins where there is one)",
    )

    def teacher_cache_dir(self) -> Path | None:
        if self.teacher_cache == "off":
            return None
        return self.teacher_cache or Path.home() / ".cache" / "absa" / "teacher"


class Settings(LogSettings, OfflineSettings):
    access_log_probes: bool = Field(
        False,
        description="log the successful (2xx) requests of /healthz, /readyz and /metrics in "
        "the access log too (a probe or a scrape every few seconds); false: left out, a "
        "failed one still logged",
    )
    reload_interval_s: float = Field(
        30.0,
        ge=0.0,
        allow_inf_nan=False,
        description="with a registry: look at its pointer every this many seconds and serve "
        "what it names (a promotion, a rollback); 0 = only on /admin/reload. With a registry "
        "or without: look at the served model's files as often (their sha256 where they "
        "changed: absa_model_files_changed); 0 = never",
    )
    admin_token: SecretStr | None = Field(
        None, description="enables /admin/*; sent as a Bearer token"
    )
    api_key: SecretStr | None = Field(
        None,
        description="when set, every /v1/* request must send 'Authorization: Bearer KEY' "
        "(else 401); several keys, comma-separated, are all accepted (a rotation). The "
        "probes, /metrics, the page and /docs stay open. No flag: a key on the command line "
        "shows in the process list",
    )
    cors_origins: str = Field(
        "",
        description="origins whose web pages may call /v1/* from a browser, comma-separated "
        "(https://app.example.com), or * for any; default: none (the service's own page "
        "needs none)",
    )
    host: str = Field(
        "127.0.0.1",
        description="the address to listen on (0.0.0.0: every interface, as in a container)",
    )
    port: int = Field(8000, ge=1, le=65535, description="the port to listen on")
    workers: int = Field(1, ge=1, description="uvicorn worker processes")
    sample_path: MaybePath = Field(
        None,
        description="a JSONL file the service appends a sample of its answers to, for people "
        "to label: each line a training record but its label (a category model's beside "
        "it, NAME.categories.jsonl; the texts are your users': default none, nothing kept)",
    )
    sample_rate: float = Field(
        0.01,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="with sample_path: the share of requests whose every answer is kept (a "
        "batch is one request: all its items' answers, or none; the lines are weighted to "
        "big requests)",
    )
    sample_below: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="with sample_path: every answer less sure than this is kept too (the "
        "probability of its label), the ones most worth a label",
    )
    sample_max_mb: float = Field(
        1024.0,
        gt=0.0,
        allow_inf_nan=False,
        description="with sample_path: no more is kept once the file is this large (MiB), "
        "until it is rotated: a sample never fills the disk",
    )
    shadow_model: Annotated[MaybePath | Literal["held"], _keyword("held")] = Field(
        None,
        description="a challenger artifact scored beside the served model, off the request "
        "path: a share of the term model's answers (shadow_rate) are answered by it too and "
        "what the two said is counted (absa_shadow_* metrics), never served (default: none); "
        "'held': the registry's newest version a retraining job held (promote = false), "
        "followed as jobs hold new ones (with registry)",
    )
    shadow_rate: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="with shadow_model: the share of requests whose term answers it scores (a "
        "batch is one request; 1: all, where the CPU has room for a second model's work); what "
        "it cannot keep up with is dropped and counted",
    )
    tracing: bool = Field(
        False,
        description="send OpenTelemetry traces of the API's requests by OTLP over HTTP, to "
        "the collector the standard OTEL_EXPORTER_OTLP_* variables name (needs absa[otel]; "
        "service/tracing.py)",
    )
    stop_on_failure: bool = Field(
        True,
        description="a worker whose batcher stopped (a bug) stops itself, after answering "
        "what it held 503: under --workers N uvicorn starts a fresh one, and a lone "
        "absa serve exits with status 70 for its restart policy (false: it stays up, "
        "answering 503, its /healthz failing)",
    )
    # micro-batching
    max_batch_size: int = Field(64, ge=1, description="aspects per onnxruntime call")
    max_wait_ms: float = Field(
        0.0,
        ge=0.0,
        allow_inf_nan=False,  # inf: a batch would wait for ever to fill
        description="how long a batch waits to fill; 0 = no wait: batches form from the "
        "requests that arrive while the previous batch runs",
    )
    max_queue: int = Field(
        8192,
        ge=1,
        description="aspects waiting; beyond it: 503 + Retry-After. Requests of more than one "
        "batch may fill three quarters of it (the rest is kept for light requests); one over "
        "that gets 413",
    )
    max_in_flight: int = Field(
        64,
        ge=1,
        description="requests to /v1/* in progress per worker; beyond it: 503 + Retry-After "
        "at once (keeps latency bounded and the event loop free for /healthz)",
    )
    shed_delay_s: float = Field(
        0.5,
        ge=0.0,
        allow_inf_nan=False,
        description="a request refused for overload (503) is answered after this pause, so "
        "clients that ignore Retry-After cannot keep the event loop busy refusing them "
        "(measured at 10x saturation: /healthz max 112-120 ms at 0.1 s, 34-42 ms at 0.5 s)",
    )
    client_timeout_s: float = Field(
        30.0,
        gt=0.0,
        allow_inf_nan=False,
        description="a client has this long after connecting to send its request's headers "
        "(absa serve; else the connection is closed) and after them to send its body (else "
        "408): slow or silent clients hold no connection for ever",
    )
    keep_alive_s: int = Field(
        75,
        ge=1,
        description="an idle keep-alive connection is held this many seconds between requests "
        "(absa serve; uvicorn's timeout_keep_alive): keep it above the idle timeout of the "
        "proxy or load balancer in front (nginx's upstream keepalive_timeout and an AWS ALB: "
        "60 s), which else sends a request on a connection the server is closing (a 502)",
    )
    # request limits
    max_text_chars: int = Field(2000, ge=1, description="characters per text (beyond: 413)")
    max_aspects: int = Field(
        32, ge=1, description="aspects per item: listed, and after expanding repeats"
    )
    max_items: int = Field(64, ge=1, description="items per /v1/predict/batch request")
    max_body_bytes: int = Field(1_000_000, ge=1, description="bytes per request body (beyond: 413)")
    max_explain_aspects: int = Field(
        64, ge=1, description="aspects answered with explain per request (bounds the response)"
    )

    @field_validator("api_key")
    @classmethod
    def _header_safe(cls, value: SecretStr | None) -> SecretStr | None:
        # the keys travel in a header: printable ASCII, no spaces (never echo them)
        raw = value.get_secret_value() if value is not None else ""
        if raw.strip() and not _keys(value):  # "$K1,$K2" with both unset: the API left open
            raise ValueError(
                "the list names no key (only commas and spaces): give the keys, or leave it "
                "empty for no key"
            )
        for key in _keys(value):
            if not all("!" <= c <= "~" for c in key):
                raise ValueError("a key may hold printable ASCII characters only, no spaces")
        return value

    @field_validator("admin_token")
    @classmethod
    def _token_sendable(cls, value: SecretStr | None) -> SecretStr | None:
        # what a request's header can carry and bearer_accepted compares (stripped, ASCII):
        # any other token would turn /admin/* on with no way in (never echo it)
        token = value.get_secret_value() if value is not None else ""
        if token != token.strip() or not all(" " <= c <= "~" or c == "\t" for c in token):
            raise ValueError(
                "a token may hold printable ASCII characters only, no space at either end"
            )
        return value

    @field_validator("cors_origins")
    @classmethod
    def _an_origin_each(cls, value: str) -> str:
        # an origin is scheme://host[:port]; a path or a typo would silently match nothing
        for origin in _origins(value):
            if origin != "*" and not _ORIGIN.fullmatch(origin):
                raise ValueError(
                    f"{origin!r} is not an origin: write scheme://host[:port] (no path), or *"
                )
        return value

    # several workers (set by ``absa serve --workers N``, N > 1)
    run_dir: MaybePath = Field(
        None,
        description="a directory the workers of one server share: /admin/reload in any "
        "worker signals the others through it",
    )
    prometheus_multiproc_dir: Path | None = Field(
        None,
        validation_alias=AliasChoices("prometheus_multiproc_dir", "PROMETHEUS_MULTIPROC_DIR"),
        description="PROMETHEUS_MULTIPROC_DIR (prometheus_client reads it too): /metrics "
        "adds up every worker's files there",
    )

    def api_keys(self) -> tuple[str, ...]:
        """The keys ``api_key`` holds (none: /v1/* is open)."""
        return tuple(_keys(self.api_key))

    def shadow_path(self) -> Path | None:
        """The shadow artifact to load now: ``shadow_model``'s path, or with ``held`` the
        registry's newest held version (``Registry.newest_held``), None while it holds none;
        a RegistryError where ``held`` has no registry to read or its registry cannot be."""
        if self.shadow_model != "held":
            return self.shadow_model
        from absa.errors import RegistryError
        from absa.model.registry import Registry

        if self.registry is None:
            raise RegistryError(
                "ABSA_SHADOW_MODEL=held follows a registry's held versions: set ABSA_REGISTRY "
                "(--registry) too, or name the shadow's directory"
            )
        reg = Registry(self.registry)
        version = reg.newest_held() if reg.looks_like(reg.root) else None
        return None if version is None else reg.path(version)

    def cors_origin_list(self) -> list[str]:
        """The origins ``cors_origins`` names (none: no CORS headers at all)."""
        return _origins(self.cors_origins)


#: every class that reads settings: the commands say their errors in one line
SETTINGS_CLASSES = (LogSettings, ModelSettings, OfflineSettings, Settings)


#: the settings whose values are secrets (SecretStr): an error names them, never the value
SECRET_FIELDS = frozenset(
    name
    for name, f in Settings.model_fields.items()
    if SecretStr in (f.annotation, *get_args(f.annotation))
)


#: settings that training reads and the server does not (not listed by `absa serve --help`)
TRAINING_ONLY = frozenset({"teacher_cache", "code_version"})


#: ABSA_* variables that are not settings, read elsewhere on purpose (never warned of):
#: the name and who reads it
OTHER_VARIABLES_READ_BY: dict[str, str] = {
    "ABSA_DATA_DIR": "the benchmarks and the tests: where the benchmark data sets are",
    "ABSA_PUBLISH_PORT": "docker compose (deploy/): the host port of the service",
    "ABSA_RETRAIN_DATA": "docker compose (deploy/): the host directory of the training data",
    "ABSA_TEST_ARTIFACTS": "the tests: where the browser test leaves its screenshots",
    "ABSA_TEST_FAULT": "the tests: a worker's injected failure",
}
OTHER_VARIABLES = frozenset(OTHER_VARIABLES_READ_BY)


def variable_of(field: str) -> str:
    """The environment variable a setting is read from (the first, where it has several):
    ABSA_<FIELD>, or its alias."""
    alias = Settings.model_fields[field].validation_alias
    if alias is None:
        return f"ABSA_{field.upper()}"
    return str(getattr(alias, "choices", [alias])[0]).upper()


def setting_variables() -> frozenset[str]:
    """The ABSA_* names pydantic-settings reads: ABSA_<FIELD>, or a field's aliases instead
    (an aliased field ignores ABSA_<FIELD>: PROMETHEUS_MULTIPROC_DIR is read, not
    ABSA_PROMETHEUS_MULTIPROC_DIR)."""
    names: set[str] = set()
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        read = [f"ABSA_{field}"] if alias is None else getattr(alias, "choices", [alias])
        names |= {str(n).upper() for n in read if str(n).upper().startswith("ABSA_")}
    return frozenset(names)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """The ABSA_* names in ``environ`` that nothing reads, sorted (pydantic-settings matches
    names in any case: absa_port is ABSA_PORT)."""
    known = setting_variables() | OTHER_VARIABLES
    return sorted(
        name for name in environ if name.upper().startswith("ABSA_") and name.upper() not in known
    )


#: the unknown ABSA_* names warned of by ``warn_unknown_variables_once``, in this process
_WARNED: set[str] = set()


def warn_unknown_variables_once() -> None:
    """``warn_unknown_variables`` of the environment, each name once per process however
    often it is asked (a script's every ``absa.load``, the app factory)."""
    fresh = {k: v for k, v in os.environ.items() if k not in _WARNED}
    _WARNED.update(warn_unknown_variables(fresh))


def warn_unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """A warning for each ABSA_* variable in the environment that is not a setting (a typo
    is ignored by pydantic-settings, silently), naming the one meant where one is close.
    Returns the names warned of."""
    environ = os.environ if environ is None else environ
    unknown = unknown_variables(environ)
    if not unknown:
        return unknown
    known = sorted(setting_variables() | OTHER_VARIABLES)
    stems = {name.removeprefix("ABSA_"): name for name in known}
    for name in unknown:
        close = difflib.get_close_matches(name.upper().removeprefix("ABSA_"), stems, n=1)
        meant = f": did you mean {stems[close[0]]}?" if close else ""
        log.warning("%s is not a setting (ignored)%s", name, meant)
    return unknown
