"""Commands that serve: serve (the HTTP service) and predict (texts or files), torch-free."""

from __future__ import annotations

import argparse
import codecs
import json
import logging
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from absa.cli.common import (
    MODEL_DEFAULT,
    CLIError,
    given,
    model_dir,
    say,
    servable,
    setting_help,
    to_stdout,
)
from absa.errors import ArtifactError, RegistryError

if TYPE_CHECKING:
    from absa.model.extractor import Extractor

EX_SOFTWARE = 70  # sysexits.h: an internal error (the batcher stopped: a bug)

log = logging.getLogger("absa")


def cmd_serve(args: argparse.Namespace) -> int:
    import os
    import signal

    import uvicorn

    from absa.settings import Settings, unknown_variables

    flags = {
        "model_dir": args.model,
        "registry": args.registry,
        "category_model": args.category_model,
        "extractor": args.extractor,
        "shadow_model": args.shadow_model,
        "shadow_rate": args.shadow_rate,
        "host": args.host,
        "port": args.port,
        "workers": args.workers,
        "device": args.device,
        "max_batch_size": args.max_batch_size,
        "max_wait_ms": args.max_wait_ms,
        "threads": args.threads,
    }
    if args.model is not None and args.registry is not None:
        raise CLIError("give --model or --registry, not both")
    given = {k: v for k, v in flags.items() if v is not None}
    if args.model is not None:  # the flag wins over ABSA_REGISTRY, as over every variable
        given["registry"] = None
        os.environ.pop("ABSA_REGISTRY", None)
    settings = Settings(**given)
    _check_startable(settings)
    for name in unknown_variables(os.environ):  # warned of already (main): not by each worker
        del os.environ[name]
    for key, value in flags.items():  # workers re-read settings from the environment
        if value is not None:
            os.environ[f"ABSA_{key.upper()}"] = str(value)
    if settings.workers > 1 and settings.threads == 0:  # each its share, not every core
        from absa.model.cpus import default_threads

        os.environ["ABSA_THREADS"] = str(default_threads(settings.workers))
    settings = Settings()
    signal.signal(signal.SIGTERM, _outside_uvicorn)
    # One worker: a closed terminal's SIGHUP ended the server on the spot, requests in flight
    # cut; it now shuts down as SIGTERM does (gracefully). More workers: uvicorn's supervisor
    # sets its own (it restarts the workers). Under nohup it stays ignored.
    hangup = signal.getsignal(signal.SIGHUP)
    ours = settings.workers == 1 and hangup not in (signal.SIG_IGN, None)
    if ours:
        HUNG_UP.clear()  # this call's (a program may call main() again)
        signal.signal(signal.SIGHUP, _hangup)
    failed = _WorkerFailed()  # uvicorn's supervisor logs it, then returns as if stopped
    logging.getLogger("uvicorn.error").addFilter(failed)
    if settings.prometheus_multiproc_dir is not None:  # the operator's: an earlier run's
        _empty_multiproc_dir(settings.prometheus_multiproc_dir)
    try:
        with _shared_by_workers(settings):
            uvicorn.run(
                "absa.service.app:create_app",
                factory=True,
                host=settings.host,
                port=settings.port,
                workers=settings.workers,
                log_level=settings.log_level,
                log_config=_log_config(
                    "debug" if args.verbose else settings.log_level, settings.log_format
                ),
                timeout_graceful_shutdown=30,
                timeout_keep_alive=settings.keep_alive_s,  # above a proxy's idle timeout
                http="absa.service.connections:FirstRequestDeadline",
            )
    finally:
        logging.getLogger("uvicorn.error").removeFilter(failed)
        if ours:  # a program that called main() keeps its own; once hung up, the process
            # ends ignoring it: a second SIGHUP there killed it (status 129) as it exited
            signal.signal(signal.SIGHUP, signal.SIG_IGN if HUNG_UP else hangup)
    if failed.seen:
        say(
            "absa serve: error: a worker could not start (see the log: the model it loads, "
            "say, is gone) and the supervisor stopped the service; "
            f"exit {EX_SOFTWARE}, for a restart policy to start it again"
        )
        return EX_SOFTWARE
    if settings.workers > 1:  # the workers were other processes: the supervisor's status
        return 0
    from absa.service.app import STOPPED_BY  # set in this process: one worker, no supervisor

    if STOPPED_BY:
        say(
            f"absa serve: error: the batcher stopped ({STOPPED_BY[0]!r}; see the log); "
            f"exit {EX_SOFTWARE}, for a restart policy to start the service again"
        )
        return EX_SOFTWARE
    return 0


class _WorkerFailed(logging.Filter):
    """Notes uvicorn's supervisor stopping because a worker failed to start (a replacement
    for one that died, whose model is gone): it then returns as after a SIGTERM, and absa
    serve exited 0, which a restart policy of "on failure" takes for a clean stop."""

    seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "failed to start, stopping the parent process" in record.getMessage():
            self.seen = True
        return True


def _outside_uvicorn(signum: int, frame: object) -> None:
    """SIGTERM while uvicorn's own handler is not set: after its graceful shutdown uvicorn
    re-raises the signal that stopped it, and under the default action a SIGTERM would end a
    cleanly stopped server with status 143. Nothing to do."""


#: the SIGHUP that stops this server, once one has come
HUNG_UP: list[int] = []


def _hangup(signum: int, frame: object) -> None:
    """SIGHUP under one worker: uvicorn's graceful shutdown, as SIGTERM gets; before uvicorn
    has set its handler (or after it put ours back), an exit with 128 + the signal. Once: a
    second (a closed terminal sends the shell's and the kernel's) is passed over with a log
    line, the stop under way (it exited 129 where it came as uvicorn had finished)."""
    import signal

    if HUNG_UP:
        log.info("SIGHUP again: passed over, the server is stopping already")
        return
    HUNG_UP.append(signum)
    if signal.getsignal(signal.SIGTERM) is _outside_uvicorn:
        raise SystemExit(128 + signum)
    signal.raise_signal(signal.SIGTERM)


def _check_startable(settings: Any) -> None:
    """What would stop every worker, as one line before uvicorn starts: with several workers
    uvicorn ends with status 0 when they fail at start-up, with one a page of traceback."""
    import os
    import socket

    import onnxruntime as ort

    from absa.model.artifact import EXTRACTOR_KIND
    from absa.model.categories import CATEGORY, TERMS
    from absa.model.runtime import choose_providers

    if settings.tracing:  # before the model loads: the extra is missing
        from absa.service.tracing import check_installed

        try:
            check_installed()
        except ImportError as e:
            raise CLIError(str(e)) from None
    servable(settings.model_path(), task=TERMS)  # a wrong --model
    if settings.category_model is not None:
        servable(settings.category_model, task=CATEGORY)
    if settings.extractor_path() is not None:
        servable(
            settings.extractor_path(), kind=EXTRACTOR_KIND, named="ABSA_EXTRACTOR / --extractor"
        )
    if settings.shadow_model == "held" and settings.registry is None:  # it can never be one
        raise CLIError(
            "ABSA_SHADOW_MODEL / --shadow-model held follows a registry's held versions: "
            "serve a registry (ABSA_REGISTRY / --registry), or name the shadow's directory"
        )
    try:  # a challenger only: its workers serve without it
        shadow = settings.shadow_path()
        if shadow is not None:
            servable(shadow, task=TERMS, named="ABSA_SHADOW_MODEL / --shadow-model")
    except (CLIError, RegistryError, OSError, ValueError) as e:  # a folder it may not read
        follows = settings.shadow_model == "held" and settings.reload_interval_s > 0
        then = " (it follows the registry: a version held later is scored)" if follows else ""
        say(
            f"absa serve: warning: {e}; the service starts without a shadow{then}",
            logging.WARNING,
        )
    # set already, they are the workers' own (absa serve makes them only where unset): a
    # missing one was a traceback in every worker (the metrics), or a failed /admin/reload
    for name, shared in (
        ("PROMETHEUS_MULTIPROC_DIR", settings.prometheus_multiproc_dir),
        ("ABSA_RUN_DIR", settings.run_dir),
    ):
        if shared is not None and not Path(shared).is_dir():
            raise CLIError(f"{name} {shared}: not a directory")
        if shared is not None and not os.access(shared, os.W_OK | os.X_OK):
            raise CLIError(f"{name} {shared}: not writable")
    if settings.prometheus_multiproc_dir is not None:
        _check_no_foreign_db(settings.prometheus_multiproc_dir)
    _check_sample(settings.sample_path)
    try:
        choose_providers(settings.device, ort.get_available_providers())
    except ArtifactError as e:
        raise CLIError(f"ABSA_DEVICE / --device: {e}") from None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            settings.host, settings.port, type=socket.SOCK_STREAM
        )[0]
    except (OSError, UnicodeError) as e:
        raise CLIError(f"ABSA_HOST / --host {settings.host!r}: not an address ({e})") from None
    # a port in use came after the model had loaded, as "[Errno 98] Address already in use"
    # naming no address (several workers) or in nine lines (one): try it as uvicorn will
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as e:
            raise CLIError(
                f"cannot listen on {settings.host}:{settings.port} ({e.strerror}); "
                "ABSA_PORT / --port picks another port"
            ) from None


def _check_no_foreign_db(directory: Path) -> None:
    """A ``*.db`` in PROMETHEUS_MULTIPROC_DIR that is not prometheus_client's (the directory
    is shared with something else): /metrics reads every ``*.db`` there, and such a file
    failed every scrape. Refused rather than removed: it is someone else's."""
    from absa.service.multiproc_files import foreign_files

    foreign = foreign_files(directory)
    if foreign:
        raise CLIError(
            f"PROMETHEUS_MULTIPROC_DIR {directory}: {foreign[0].name} is not "
            "prometheus_client's (/metrics reads every *.db there): move it, or give the "
            "server a directory of its own"
        )


def _check_sample(sample: Path | None) -> None:
    """ABSA_SAMPLE_PATH, a file the workers can append to (made by the first of them)."""
    import os

    if sample is None:
        return
    if sample.is_dir():
        raise CLIError(f"ABSA_SAMPLE_PATH {sample}: a directory; name a file (answers.jsonl)")
    if not sample.parent.is_dir():
        raise CLIError(f"ABSA_SAMPLE_PATH {sample}: no such directory as {sample.parent}")
    if sample.exists() and not (sample.is_file() or sample.is_fifo()):
        raise CLIError(f"ABSA_SAMPLE_PATH {sample}: not a regular file")
    if not os.access(sample if sample.exists() else sample.parent, os.W_OK):
        raise CLIError(f"ABSA_SAMPLE_PATH {sample}: not writable")


def _log_config(level: str, fmt: str = "text") -> dict:
    """uvicorn's logging, plus the project's loggers at ``level`` (ABSA_LOG_LEVEL, -v:
    debug) in the format of the CLI: set up in every worker process, where the CLI's own
    set-up (in the parent) does not reach. ``fmt`` "json": uvicorn's lines (its access
    log too) and the project's, each one JSON object."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    # every line to stderr, each naming its worker: the access log went to stdout, and
    # uvicorn's lines named no process
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    for name in ("default", "access"):
        line = config["formatters"][name]["fmt"]
        config["formatters"][name]["fmt"] = line.replace(
            "%(levelprefix)s ", "%(levelprefix)s [%(process)d] ", 1
        )
    config["formatters"]["absa"] = {
        "format": "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"
    }
    # an access line ends with its request's id and duration
    config["formatters"]["access"]["()"] = "absa.service.logs.AccessText"
    if fmt == "json":
        for name in ("default", "access", "absa"):
            config["formatters"][name] = {"()": "absa.service.logs.JsonLines"}
    config["handlers"]["absa"] = {
        "formatter": "absa",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    # every line logged while a request is handled names it (request_id)
    config["filters"] = {"request": {"()": "absa.service.logs.RequestFields"}}
    for handler in config["handlers"].values():
        handler["filters"] = ["request"]
    config["loggers"]["absa"] = {
        "handlers": ["absa"],
        "level": "DEBUG" if level == "trace" else level.upper(),
        "propagate": False,
    }
    # ABSA_TRACING: the exporter's warnings (a collector down) in the same format, not
    # through Python's bare fallback handler
    config["loggers"]["opentelemetry"] = {
        "handlers": ["absa"],
        "level": "WARNING",
        "propagate": False,
    }
    return config


def _empty_multiproc_dir(directory: Path) -> None:
    """Removes prometheus_client's files from a PROMETHEUS_MULTIPROC_DIR set before absa
    serve started, before any worker does: the counts of an earlier run were a fresh
    server's (/metrics adds up every file there), and the files of every worker ever
    started piled up. Only those files: anything else there is left as it is."""
    from absa.service.multiproc_files import own_files

    removed = 0
    for f in own_files(directory):
        if f.is_file():
            f.unlink(missing_ok=True)
            removed += 1
    log.info(
        "emptied PROMETHEUS_MULTIPROC_DIR %s: removed %d metrics files of an earlier run",
        directory,
        removed,
    )


@contextmanager
def _shared_by_workers(settings: Any) -> Iterator[None]:
    """With several workers: a fresh directory they share (the reload signal, and the
    Prometheus multiprocess files, set before any worker imports prometheus_client), in the
    environment the workers inherit; removed on exit. Directories set already are kept."""
    import os
    import shutil
    import tempfile

    if settings.workers <= 1:
        yield
        return
    made = Path(tempfile.mkdtemp(prefix="absa-serve-"))
    set_here: list[str] = []
    try:
        if settings.run_dir is None:
            os.environ["ABSA_RUN_DIR"] = str(made)
            set_here.append("ABSA_RUN_DIR")
        if settings.prometheus_multiproc_dir is None:
            (made / "metrics").mkdir()
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(made / "metrics")
            set_here.append("PROMETHEUS_MULTIPROC_DIR")
        yield
    finally:
        for name in set_here:  # no longer pointing at the directory removed below
            os.environ.pop(name, None)
        shutil.rmtree(made, ignore_errors=True)


def cmd_predict(args: argparse.Namespace) -> int:
    _check_predict_flags(args)
    if args.engine == "ray":
        return _predict_on_ray(args)
    from absa.model.categories import TERMS
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.settings import OfflineSettings

    settings = OfflineSettings()  # no server: a bad server-only setting is not its to refuse
    device = args.device or settings.device
    threads = settings.threads if args.threads is None else args.threads
    if args.category:
        return _predict_categories(args, device, threads, settings.category_model)
    if args.input:
        return _score_input(args, device, threads)
    # the kind of model first: a category model asked without --category is told so, not
    # to want --aspect or an extractor
    path = servable(model_dir(args.model), task=TERMS)
    extractor = None
    if args.extractor:
        settings = OfflineSettings(extractor=args.extractor)
    ext_dir = settings.extractor_path()
    if args.text and not args.aspect:
        if ext_dir is None:
            raise CLIError(
                "give at least one --aspect, or --extractor DIR (or ABSA_EXTRACTOR; 'shipped': "
                "the packaged one) to have the aspects of --text extracted"
            )
        # a missing or wrong one named as where it came from, as absa serve and load() do
        named = "--extractor" if args.extractor else "ABSA_EXTRACTOR"
        extractor = _load_extractor(_servable_extractor(ext_dir, named), device, threads)
    runtime = Runtime.load(path, device=device, threads=threads)
    predictor = Predictor(runtime, extractor=extractor)
    results = [r.to_dict() for r in predictor(args.text, args.aspect, explain=args.explain)]
    return _print(args, predictor.model_id, results)


def _score_input(args: argparse.Namespace, device: str, threads: int) -> int:
    """``--input``: a file's rows scored by the model, whichever kind it is: rows of aspect
    terms for a term model, of categories for a category model (its metadata's task); with
    ``--extractor`` (not ``ABSA_EXTRACTOR``: a file's rows name their aspects unless told),
    rows of texts whose aspects it finds."""
    from absa.model.categories import CATEGORY
    from absa.model.category_predictor import CategoryPredictor
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.scoring import FileModel, score_file
    from absa.settings import OfflineSettings

    path = servable(model_dir(args.model))
    ext_dir = None
    if args.extractor:  # said before a model loads, as for one --text
        ext_dir = _servable_extractor(OfflineSettings(extractor=args.extractor).extractor_path())
    runtime = Runtime.load(path, device=device, threads=threads, task=None)
    if runtime.task == CATEGORY and ext_dir is not None:
        raise CLIError(f"{path}: an aspect-category model scores its rows' categories; "
                       "--extractor finds aspect terms, for an aspect-term model")  # fmt: skip
    extractor = None if ext_dir is None else _load_extractor(ext_dir, device, threads)
    predictor: FileModel = (
        CategoryPredictor(runtime)
        if runtime.task == CATEGORY
        else Predictor(runtime, extractor=extractor)
    )
    stats = score_file(predictor, Path(args.input), Path(args.output), progress=not args.quiet)
    to_stdout(
        f"{stats.rows} rows: {stats.scored} scored, {stats.rows - stats.scored} bad -> "
        f"{args.output}\n"
    )
    _say_if_empty(args, stats.rows)
    return 0 if not stats.bad else 1


def _servable_extractor(ext_dir: Path | None, named: str = "--extractor") -> Path:
    """``ext_dir`` checked to be an extractor artifact, a bad one said as ``named`` gave it."""
    from absa.model.artifact import EXTRACTOR_KIND

    assert ext_dir is not None  # given
    return servable(ext_dir, kind=EXTRACTOR_KIND, named=named)


def _load_extractor(ext_dir: Path, device: str, threads: int) -> Extractor:
    from absa.model.extractor import Extractor

    return Extractor.load(ext_dir, device=device, threads=threads)


#: predict's flags that only --engine ray reads, with their defaults (the parser's too)
RAY_ONLY = {"ray_workers": 2, "num_gpus": 0, "batch_size": 4096, "output_format": "parquet"}


def _check_predict_flags(args: argparse.Namespace) -> None:
    """Refuse flags this call would ignore: --output without --input printed to stdout and
    wrote nothing; --text/--aspect/--explain/--extractor beside --input, and Ray's flags
    without --engine ray, did nothing. What would fail anyway (no --output, nothing to
    classify, a file that cannot be scored) fails here, before the model loads."""
    if args.input and (args.text or args.aspect or args.category or args.explain):
        raise CLIError("--input scores a file: --text, --aspect, --category and --explain are "
                       "for one text")  # fmt: skip
    if args.input and args.extractor and args.engine == "ray":  # its actors load none
        raise CLIError("--extractor with --input runs on the local engine (leave out "
                       "--engine ray); Ray scores the aspects rows name")  # fmt: skip
    if args.extractor and (args.aspect or args.category):  # never loaded: a typo went unsaid
        raise CLIError("--extractor finds the aspects of a --text given without --aspect or "
                       "--category")  # fmt: skip
    if args.output and not args.input:
        raise CLIError("--output needs --input (a file to score); one --text prints to stdout")
    if args.threads is not None and args.threads < 0:  # onnxruntime's words named no flag
        raise CLIError(f"--threads is a whole number >= 0 (0: the CPUs), not {args.threads}")
    if args.text is not None and not args.text.strip():  # said "give --text" after loading
        raise CLIError("--text is empty: give the sentence whose aspects to classify")
    if args.engine == "ray":  # its own checks: an output there is a directory of files
        for flag, n in (("--workers", args.ray_workers), ("--batch-size", args.batch_size)):
            if n < 1:  # score_with_ray's own words named neither flag nor value
                raise CLIError(f"{flag} is at least 1, not {n}")
        if not 0 <= args.num_gpus < math.inf:  # nan passed a check of < 0, then failed in Ray
            raise CLIError(f"--num-gpus is a number >= 0, not {args.num_gpus}")
        if args.device is not None:  # never read: cpu scored on a GPU, cuda on CPUs
            raise CLIError(
                "--device is for the local engine; with --engine ray give --num-gpus (GPUs "
                "per actor: above 0 the model runs on CUDA, 0 on CPUs)"
            )
        if args.threads is not None:  # never read: each actor runs one thread
            raise CLIError(
                "--threads is for the local engine; with --engine ray each of --workers "
                "actors runs one onnxruntime thread"
            )
        from absa.settings import OfflineSettings

        if OfflineSettings().device != "auto":  # the environment's, for `absa serve`: unread here
            log.warning("ABSA_DEVICE is not read by --engine ray: --num-gpus (GPUs per actor) "
                        "puts the model on CUDA, 0 on CPUs")  # fmt: skip
        if OfflineSettings().threads:
            log.warning("ABSA_THREADS is not read by --engine ray: each actor runs one "
                        "onnxruntime thread")  # fmt: skip
        return
    given = [
        "--" + ("workers" if k == "ray_workers" else k.replace("_", "-"))
        for k, default in RAY_ONLY.items()
        if getattr(args, k) != default
    ]
    if given:
        raise CLIError(f"{', '.join(given)}: for --engine ray")
    if args.input and not args.output:
        raise CLIError("--input needs --output")
    if not args.input and not args.text and not args.category:
        raise CLIError("give --text (with --aspect, or extracted), or --input and --output")
    if args.input:  # a missing input, an unknown suffix, ...: said before the model loads
        from absa.scoring_paths import check_files

        check_files(Path(args.input), Path(args.output))


def _predict_categories(
    args: argparse.Namespace, device: str, threads: int, category_model: Path | None = None
) -> int:
    """``--category``: the sentiment towards aspect categories, with a category model:
    ``--model``, else ``ABSA_CATEGORY_MODEL`` (``category_model``), else the default model."""
    from absa.model.categories import CATEGORY, SHIPPED_CATEGORY_MODEL
    from absa.model.category_predictor import CategoryPredictor
    from absa.model.runtime import Runtime

    if args.aspect or args.input:
        raise CLIError("--category goes with --text only (not with --aspect or --input)")
    if not args.text:
        raise CLIError("--category needs --text")
    given = args.model or category_model
    try:
        path = servable(Path(given) if given else model_dir(None), task=CATEGORY)
    except CLIError as e:
        if given:
            raise
        raise CLIError(
            f"{e}: give --category a category model with --model DIR (the shipped one: "
            f"{SHIPPED_CATEGORY_MODEL}) or ABSA_CATEGORY_MODEL"
        ) from None
    runtime = Runtime.load(path, device=device, threads=threads, task=CATEGORY)
    predictor = CategoryPredictor(runtime)
    results = [r.to_dict() for r in predictor(args.text, args.category, explain=args.explain)]
    return _print(args, predictor.model_id, results)


def _print(args: argparse.Namespace, model_id: str, results: list[dict]) -> int:
    if args.explain:
        from absa.cli.heatmap import render, use_color

        sys.stderr.write(render(args.text, results, color=use_color(sys.stderr)) + "\n")
    # the text's own letters where stdout takes them ("café", as the answer files and the
    # HTTP API write them); \u escapes where it cannot (PYTHONIOENCODING=ascii, a Latin-1
    # terminal): the same JSON either way
    try:  # codecs' own name of it: "UTF8", "utf_8", "u8" are all "utf-8"
        plain = codecs.lookup(sys.stdout.encoding or "ascii").name == "utf-8"
    except LookupError:
        plain = False
    answer = {"model": model_id, "results": results}
    to_stdout(json.dumps(answer, ensure_ascii=not plain) + "\n")
    return 0


def _predict_on_ray(args: argparse.Namespace) -> int:
    if not args.input or not args.output:
        raise CLIError("--engine ray needs --input and --output")
    from absa.bulk import score_with_ray  # without Ray installed: a line naming absa[ray]

    stats = score_with_ray(
        args.input,
        args.output,
        model=args.model,
        output_format=args.output_format,
        workers=args.ray_workers,
        num_gpus=args.num_gpus,
        batch_size=args.batch_size,
        progress=not args.quiet,
    )
    to_stdout(
        f"{stats.rows} rows: {stats.rows - stats.bad} scored, {stats.bad} bad -> "
        f"{args.output} ({stats.files} files, {stats.seconds:.1f} s)\n"
    )
    _say_if_empty(args, stats.rows)
    return 0 if not stats.bad else 1


def _say_if_empty(args: argparse.Namespace, rows: int) -> None:
    """A warning where the input held no rows (an empty or blank file: its output is
    written, empty, and the command succeeds, as for a day without reviews), since a
    wrong file or an export cut to nothing reads the same."""
    if not rows:
        say(f"absa predict: warning: {args.input} holds no rows to score", logging.WARNING)


def _flagless_variables(parser: argparse.ArgumentParser) -> str:
    """The epilog of `absa serve --help`: the ABSA_* variables it has no flag for."""
    from absa.settings import TRAINING_ONLY, Settings, variable_of

    flagged = " ".join(a.help or "" for a in parser._actions)
    names = [variable_of(field) for field in Settings.model_fields if field not in TRAINING_ONLY]
    rest = [n for n in names if n.startswith("ABSA_") and f"env {n})" not in flagged]
    return (
        f"Settings without a flag, as variables only: {', '.join(rest)}. README.md's "
        "Settings table gives every setting's default and what it does."
    )


def register(sub: Any) -> None:
    s = sub.add_parser(
        "serve",
        help="run the HTTP service (every setting also as an ABSA_* variable)",
        description="Run the HTTP service. A flag overrides its ABSA_* variable.",
    )
    s.add_argument(
        "--model",
        type=given,
        help=setting_help("model_dir", "artifact directory to serve", "the shipped model"),
    )
    s.add_argument(
        "--registry",
        type=given,
        help=setting_help("registry", "serve the registry's current version and follow it", "none"),
    )
    s.add_argument(
        "--category-model",
        type=given,
        help=setting_help(
            "category_model", "an aspect-category artifact to serve beside the model", "none"
        ),
    )
    s.add_argument(
        "--extractor",
        type=given,
        help=setting_help(
            "extractor",
            "an aspect extractor artifact ('shipped': the packaged one): requests without "
            "aspects get them extracted",
            "none: such requests are refused",
        ),
    )
    s.add_argument(
        "--shadow-model",
        type=given,
        help=setting_help(
            "shadow_model",
            "a challenger artifact scored beside the model on live traffic (never served; "
            "absa_shadow_* metrics); 'held' with --registry: the newest version a retraining "
            "job held, followed as jobs hold new ones",
            "none",
        ),
    )
    s.add_argument("--shadow-rate", type=float, help=setting_help("shadow_rate"))
    s.add_argument("--host", help=setting_help("host", "address to listen on"))
    s.add_argument("--port", type=int, help=setting_help("port", "port to listen on"))
    s.add_argument("--workers", type=int, help=setting_help("workers"))
    s.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        help=setting_help("device", "onnxruntime device; auto: CUDA where present"),
    )
    s.add_argument("--threads", type=int, help=setting_help("threads"))
    s.add_argument("--max-batch-size", type=int, help=setting_help("max_batch_size"))
    s.add_argument("--max-wait-ms", type=float, help=setting_help("max_wait_ms"))
    s.epilog = _flagless_variables(s)
    s.set_defaults(func=cmd_serve)

    q = sub.add_parser(
        "predict", help="classify aspects of a text, or score JSONL/CSV/Parquet files"
    )
    q.add_argument("--model", type=given, help=f"artifact directory ({MODEL_DEFAULT})")
    q.add_argument("--text", help="the text to classify (default: none; or give --input)")
    q.add_argument(
        "--aspect",
        "--aspects",
        action="extend",
        nargs="+",
        metavar="ASPECT",
        help="aspect terms in --text: --aspect burger --aspect fries, or --aspects burger "
        "fries (default: none: extracted, see --extractor)",
    )
    q.add_argument(
        "--extractor",
        type=given,
        help=setting_help(
            "extractor",
            "an extractor artifact ('shipped': the packaged one) that finds the aspects of "
            "--text when no --aspect is given; with --input, of each row's text (rows "
            "{text}, answered in pred_aspects; a row naming an aspect is refused; files "
            "read the flag only, not ABSA_EXTRACTOR)",
            "none: --text needs --aspect, rows of --input name their aspect",
        ),
    )
    q.add_argument(
        "--category",
        "--categories",
        action="extend",
        nargs="+",
        metavar="CATEGORY",
        help="aspect categories (with a category model, e.g. food; without --model: "
        "$ABSA_CATEGORY_MODEL where set), as --aspect takes terms (default: none)",
    )
    q.add_argument(
        "--input",
        type=given,
        help="a .jsonl, .csv or .parquet file of {text, aspect, start?, end?} rows to score "
        "({text, category} rows with a category model, {text} with --extractor); with "
        "--engine ray also a directory, a "
        "glob or a URI; exit status 1 when a row is bad (default: none; or give --text)",
    )
    q.add_argument(
        "--output",
        type=given,
        help="where to write the scored rows, .jsonl, .csv or .parquet; with --engine ray a "
        "new directory or URI (default: none)",
    )
    q.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="score files in this process, or on Ray: a local instance, or the cluster at "
        "$RAY_ADDRESS (needs absa[ray]) (default: local)",
    )
    q.add_argument(
        "--workers",
        dest="ray_workers",  # not the server's ABSA_WORKERS
        type=int,
        default=RAY_ONLY["ray_workers"],
        help="--engine ray: scoring actors, one CPU each (default: 2)",
    )
    q.add_argument(
        "--num-gpus",
        type=float,
        default=RAY_ONLY["num_gpus"],
        help="--engine ray: GPUs per actor; above 0 the model runs on CUDA (default: 0)",
    )
    q.add_argument(
        "--batch-size",
        type=int,
        default=RAY_ONLY["batch_size"],
        help="--engine ray: rows per call (default: 4096)",
    )
    q.add_argument(
        "--output-format",
        choices=["parquet", "jsonl"],
        default=RAY_ONLY["output_format"],
        help="--engine ray: the partitions' format (default: parquet)",
    )
    q.add_argument(
        "--explain", action="store_true", help="show the attention heatmap (default: off)"
    )
    q.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        help=setting_help("device", "onnxruntime device; auto: CUDA where present"),
    )
    q.add_argument(
        "--threads",
        type=int,
        help=setting_help(
            "threads", "onnxruntime intra-op threads; 0: the CPUs this process may use"
        ),  # fmt: skip
    )
    q.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (default: a bar counting rows, on a terminal only; --engine ray: "
        "Ray Data's progress report)",
    )
    q.set_defaults(func=cmd_predict)
