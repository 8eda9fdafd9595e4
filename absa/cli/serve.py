"""Commands that serve: serve (the HTTP service) and predict (texts or files), torch-free."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from absa.cli.common import CLIError, model_dir


def cmd_serve(args: argparse.Namespace) -> int:
    import os
    import signal

    import uvicorn

    from absa.settings import Settings

    flags = {
        "model_dir": args.model,
        "registry": args.registry,
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
        "absa.service.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        timeout_graceful_shutdown=30,
    )
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime

    predictor = Predictor(Runtime.load(model_dir(args.model), device=args.device or "auto"))
    if args.input:
        if not args.output:
            raise CLIError("--input needs --output")
        from absa.scoring import score_file

        stats = score_file(predictor, Path(args.input), Path(args.output), progress=not args.quiet)
        sys.stdout.write(
            f"{stats.rows} rows: {stats.scored} scored, {len(stats.bad)} bad -> {args.output}\n"
        )
        return 0 if not stats.bad else 1
    if not args.text or not args.aspect:
        raise CLIError("give --text and at least one --aspect, or --input and --output")
    results = [r.to_dict() for r in predictor(args.text, args.aspect, explain=args.explain)]
    if args.explain:
        from absa.cli.heatmap import render

        sys.stderr.write(render(args.text, results, color=sys.stderr.isatty()) + "\n")
    sys.stdout.write(json.dumps({"model": predictor.model_id, "results": results}) + "\n")
    return 0


def register(sub: Any) -> None:
    s = sub.add_parser("serve", help="run the HTTP service (settings also from ABSA_* variables)")
    s.add_argument("--model", help="artifact directory (default: the shipped model)")
    s.add_argument("--registry", help="serve the registry's current version and follow it")
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
