"""The ``absa`` command line: train, evaluate, export, predict, serve, retrain, models.

Each command imports what it needs when it runs, so ``absa serve`` and ``absa predict``
work in an install without torch.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported lazily at run time: serve/predict must work without torch
    from model.registry import Registry
    from training.records import ReadResult

log = logging.getLogger("absa")


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _read(paths: Sequence[str], skip_invalid: bool) -> ReadResult:
    from training.readers import read_many

    res = read_many(paths, skip_invalid=skip_invalid)
    if res.skipped:
        log.warning("skipped %d invalid records", len(res.skipped))
        for bad in res.skipped[:20]:
            log.warning("  %s: %s", bad.source, bad.reason)
        if len(res.skipped) > 20:
            log.warning("  ... and %d more", len(res.skipped) - 20)
    return res


def _data_info(paths: Sequence[str]) -> list[dict]:
    from training.checkpoint import sha256_file

    return [{"path": str(p), "sha256": sha256_file(Path(p))} for p in paths]


def cmd_train(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from training.evaluate import evaluate
    from training.metrics import format_report
    from training.presets import load_config
    from training.train import fit

    preset = load_config(Path(args.config) if args.config else None, args.preset)
    over = {
        k: v
        for k, v in (
            ("seed", args.seed),
            ("epochs", args.epochs),
            ("threads", args.threads),
            ("device", args.device),
        )
        if v is not None
    }
    if over:
        preset = replace(preset, train=replace(preset.train, **over))
    train = _read(args.train, args.skip_invalid)
    dev = _read(args.dev, args.skip_invalid).examples if args.dev else None
    info = {
        "train": _data_info(args.train),
        "dev": _data_info(args.dev or []),
        "skipped_invalid": len(train.skipped),
    }
    examples = train.examples
    if args.exclude:
        from training.readers import drop_overlap

        examples, dropped = drop_overlap(examples, _read(args.exclude, True).examples)
        info["exclude"] = _data_info(args.exclude)
        info["excluded_overlap"] = dropped
        log.info("dropped %d training examples whose sentence occurs in --exclude files", dropped)
    result = fit(
        examples,
        dev,
        preset,
        Path(args.out),
        data_info=info,
        progress=not args.quiet,
        preset_name=preset.name,
    )
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    for path in args.eval or []:
        rep = evaluate(result.run_dir, _read([path], args.skip_invalid).examples)
        metrics.setdefault("eval", {})[path] = rep
        log.info("%s\n%s", path, format_report(rep))
    (result.run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    dev_rep = result.dev
    sys.stdout.write(
        f"run written to {result.run_dir}: best epoch {result.best_epoch}, dev accuracy "
        f"{dev_rep['accuracy'] * 100:.2f}, dev macro-F1 {dev_rep['macro_f1'] * 100:.2f}\n"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from training.evaluate import evaluate
    from training.metrics import format_report

    model = _model_dir(args.model)
    examples = _read(args.data, args.skip_invalid).examples
    rep = evaluate(model, examples)
    rep["model"] = str(model)
    rep["data"] = list(args.data)
    if args.json:
        sys.stdout.write(json.dumps(rep) + "\n")
    else:
        sys.stdout.write(format_report(rep) + "\n")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from model.export import export_run

    meta = export_run(
        Path(args.run), Path(args.out), quantize=args.quantize, name=args.name, version=args.version
    )
    par = meta["parity"]
    msg = (
        f"artifact written to {args.out}: parity on {par['n']} dev items, max |diff| "
        f"{par['max_abs_diff']:.1e}, dev accuracy {par['dev_accuracy_onnx'] * 100:.2f}"
    )
    if "quantization" in meta:
        q = meta["quantization"]
        msg += (
            f"; int8 dev accuracy {q['dev_accuracy_int8'] * 100:.2f} "
            f"({q['accuracy_change'] * 100:+.2f}), {q['changed_predictions']} predictions changed"
        )
    sys.stdout.write(msg + "\n")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import os
    import signal

    import uvicorn

    from service.settings import Settings

    flags = {
        "model_dir": args.model,
        "host": args.host,
        "port": args.port,
        "workers": args.workers,
        "device": args.device,
        "max_batch_size": args.max_batch_size,
        "max_wait_ms": args.max_wait_ms,
        "threads": args.threads,
    }
    for key, value in flags.items():  # workers re-read settings from the environment
        if value is not None:
            os.environ[f"ABSA_{key.upper()}"] = str(value)
    settings = Settings()
    # After its graceful shutdown uvicorn re-raises the signal that stopped it; under the
    # default action a SIGTERM would then end a cleanly stopped server with status 143.
    signal.signal(signal.SIGTERM, lambda *_: None)
    uvicorn.run(
        "service.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        timeout_graceful_shutdown=30,
    )
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from model.runtime import Runtime
    from model.text import find_all

    rt = Runtime.load(_model_dir(args.model), device=args.device)
    if args.input:
        if not args.output:
            raise CLIError("--input needs --output")
        from service.scoring import score_file

        stats = score_file(rt, Path(args.input), Path(args.output), progress=not args.quiet)
        sys.stdout.write(
            f"{stats.rows} rows: {stats.scored} scored, {len(stats.bad)} bad -> {args.output}\n"
        )
        return 0 if not stats.bad else 1
    if not args.text or not args.aspect:
        raise CLIError("give --text and at least one --aspect, or --input and --output")
    from service.predictor import to_result

    spans = []
    for a in args.aspect:
        found = find_all(args.text, a)
        if not found:
            raise CLIError(f"aspect {a!r} does not occur in the text")
        spans.extend((args.text[s:e], s, e) for s, e in found)
    outs = rt.run([rt.encode(args.text, s, e) for _, s, e in spans])
    results = [
        to_result(rt, span, o, args.explain).model_dump(exclude_none=True)
        for span, o in zip(spans, outs, strict=True)
    ]
    if args.explain:
        from service.heatmap import render

        sys.stderr.write(render(args.text, results, color=sys.stderr.isatty()) + "\n")
    sys.stdout.write(json.dumps({"model": rt.metadata.get("name"), "results": results}) + "\n")
    return 0


def cmd_retrain(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from training.retrain import RetrainConfig, retrain, summary

    cfg = RetrainConfig.load(Path(args.config))
    if args.skip_invalid:
        cfg = replace(cfg, skip_invalid=True)
    report = retrain(cfg, version=args.version, progress=not args.quiet)
    sys.stdout.write(summary(report) + "\n")
    return 0 if report["promoted"] else 3


def _registry(args: argparse.Namespace) -> Registry:
    import os

    from model.registry import Registry

    root = args.registry or os.environ.get("ABSA_REGISTRY")
    if not root:
        raise CLIError("name the registry with --registry DIR or ABSA_REGISTRY")
    return Registry(root)


def cmd_models(args: argparse.Namespace) -> int:
    reg = _registry(args)
    current = reg.current()
    if args.action == "list":
        for v in reg.versions():
            m = reg.metadata(v)
            ev = " ".join(
                f"{k}={x['accuracy'] * 100:.2f}/{x['macro_f1'] * 100:.2f}"
                for k, x in (m.get("eval") or {}).items()
            )
            mark = "*" if v == current else " "
            sys.stdout.write(
                f"{mark} {v:<22} {m.get('created', ''):<26} parent={m.get('parent')} {ev}\n"
            )
        return 0
    if args.action == "show":
        if not args.version:
            raise CLIError("models show needs a VERSION")
        sys.stdout.write(json.dumps(reg.metadata(args.version), indent=1) + "\n")
        return 0
    with reg.lock():
        if args.action == "promote":
            if not args.version:
                raise CLIError("models promote needs a VERSION")
            reg.promote(args.version, reason="manual")
            sys.stdout.write(f"current: {args.version}\n")
        else:
            sys.stdout.write(f"current: {reg.rollback()}\n")
    return 0


def _model_dir(model: str | None) -> Path:
    if model:
        return Path(model)
    from model.runtime import default_model_dir

    return default_model_dir()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="absa", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a model and write a run directory")
    t.add_argument(
        "--train", nargs="+", required=True, help="training files (xml, 3-line, jsonl, csv)"
    )
    t.add_argument("--dev", nargs="+", help="dev files (default: a seeded 10%% of train)")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--preset", help="a named preset (see `absa presets`)")
    g.add_argument("--config", help="a JSON/TOML config: {preset, model: {...}, train: {...}}")
    t.add_argument("--out", required=True, help="the run directory to write")
    t.add_argument(
        "--eval", nargs="+", help="files to evaluate the final model on (never used to select)"
    )
    t.add_argument(
        "--exclude", nargs="+", help="drop training sentences that occur in these files (test sets)"
    )
    t.add_argument("--seed", type=int)
    t.add_argument("--epochs", type=int)
    t.add_argument("--threads", type=int)
    t.add_argument("--device", choices=["auto", "cpu", "cuda"], help="default: auto (CUDA if seen)")
    t.add_argument("--skip-invalid", action="store_true", help="skip bad records and report them")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("evaluate", help="accuracy, macro-F1, per-class scores, confusion matrix")
    e.add_argument(
        "--model", help="a run directory or an exported artifact (default: the shipped model)"
    )
    e.add_argument("--data", nargs="+", required=True)
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--skip-invalid", action="store_true")
    e.set_defaults(func=cmd_evaluate)

    x = sub.add_parser("export", help="export a run to an ONNX artifact directory (parity-checked)")
    x.add_argument("--run", required=True, help="a training run directory")
    x.add_argument("--out", required=True, help="the artifact directory to create")
    x.add_argument("--quantize", choices=["int8"], help="onnxruntime dynamic int8 quantisation")
    x.add_argument("--name", help="model name (default: the preset)")
    x.add_argument("--version", help="model version (default: a UTC timestamp)")
    x.set_defaults(func=cmd_export)

    s = sub.add_parser("serve", help="run the HTTP service (settings also from ABSA_* variables)")
    s.add_argument("--model", help="artifact directory (default: the shipped model)")
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.add_argument("--workers", type=int)
    s.add_argument("--device", choices=["auto", "cpu", "cuda"])
    s.add_argument("--threads", type=int, help="onnxruntime threads per worker")
    s.add_argument("--max-batch-size", type=int)
    s.add_argument("--max-wait-ms", type=float)
    s.set_defaults(func=cmd_serve)

    q = sub.add_parser("predict", help="classify aspects of a text, or score a JSONL/CSV file")
    q.add_argument("--model", help="artifact directory (default: the shipped model)")
    q.add_argument("--text")
    q.add_argument("--aspect", action="append", help="an aspect term (repeat for more)")
    q.add_argument("--input", help="a .jsonl or .csv file of {text, aspect, start?, end?} rows")
    q.add_argument("--output", help="where to write the scored rows (.jsonl or .csv)")
    q.add_argument("--explain", action="store_true", help="show the attention heatmap")
    q.add_argument("--device", choices=["auto", "cpu", "cuda"])
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.set_defaults(func=cmd_predict)

    r = sub.add_parser(
        "retrain", help="retrain, evaluate against the champion, promote if it passes"
    )
    r.add_argument("--config", required=True, help="a TOML retraining config")
    r.add_argument("--version", help="version name (default: a UTC timestamp)")
    r.add_argument("--skip-invalid", action="store_true")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=cmd_retrain)

    m = sub.add_parser("models", help="the model registry: list, show V, promote V, rollback")
    m.add_argument("action", choices=["list", "show", "promote", "rollback"])
    m.add_argument("version", nargs="?")
    m.add_argument("--registry", help="registry directory (default: $ABSA_REGISTRY)")
    m.set_defaults(func=cmd_models)

    pr = sub.add_parser("presets", help="list the presets")
    pr.set_defaults(func=cmd_presets)
    return p


def cmd_presets(args: argparse.Namespace) -> int:
    from training.presets import PRESETS

    for name, preset in PRESETS.items():
        sys.stdout.write(f"{name:<22} {preset.about}\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (CLIError, ValueError, KeyError, RuntimeError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        sys.stderr.write(f"absa {args.command}: error: {msg}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
