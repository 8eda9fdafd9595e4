"""absa export: a training run to an ONNX artifact directory, parity-checked."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from absa.cli.common import CLIError, check_new_out, given, given_name, to_stdout
from absa.cli.train import command_of


def cmd_export(args: argparse.Namespace) -> int:
    from absa.cli.extract import cmd_export_extract, is_extraction_model
    from absa.training.exporting import export_run

    if args.expand_top_k is not None and args.expand_vocab is None:
        raise CLIError("--expand-top-k needs --expand-vocab")
    if args.expand_top_k is not None and args.expand_top_k < 0:  # words[:-3]: all but 3
        raise CLIError(f"--expand-top-k is a number of words, >= 0, not {args.expand_top_k}")
    if is_extraction_model(Path(args.run)):
        return cmd_export_extract(args)
    if args.top_map and args.no_calibrate:  # the map is fitted after T: none without it
        raise CLIError("--top-map needs the temperature that --no-calibrate leaves out: give one")
    if bool(args.domain_temperature) != bool(args.domain_files):
        raise CLIError("--domain-temperature NAME and --domain-files FILE... go together")
    if args.domain_temperature and args.no_calibrate:
        raise CLIError(
            "--domain-temperature is fitted after the temperature --no-calibrate leaves out"
        )
    # before the export's work
    check_new_out(Path(args.out), "export into a new directory", Path(args.run))
    meta = export_run(
        Path(args.run),
        Path(args.out),
        quantize=args.quantize,
        name=args.name,
        version=args.version,
        calibrate=not args.no_calibrate,
        top_map=args.top_map,
        expand_vocab=args.expand_vocab,
        expand_top_k=args.expand_top_k,
        command=command_of(args),
        domain=(args.domain_temperature, args.domain_files) if args.domain_temperature else None,
    )
    par, cal = meta["parity"], meta["calibration"]
    msg = (
        f"artifact written to {args.out}: parity on {par['n']} dev items, max |diff| "
        f"{par['max_abs_diff']:.1e}, dev accuracy {par['dev_accuracy_onnx'] * 100:.2f}; "
        + (
            f"temperature {cal['temperature']:.3f}, dev ECE ({cal['bins']} bins) "
            f"{cal['dev']['ece_before'] * 100:.2f} -> {cal['dev']['ece_after'] * 100:.2f}"
            if cal.get("fitted", True)
            else f"not calibrated (--no-calibrate): dev ECE ({cal['bins']} bins) "
            f"{cal['dev']['ece_before'] * 100:.2f}"
        )
        + (" (with the top-label map, out of fold)" if "top_map" in cal else "")
        + (
            f"; {cal['domain']['name']} temperature {cal['domain']['temperature']:.3f} on "
            f"{cal['domain']['dev_items']} dev items"
            if "domain" in cal
            else ""
        )
    )
    if "quantization" in meta:
        q = meta["quantization"]
        msg += (
            f"; int8 dev accuracy {q['dev_accuracy_int8'] * 100:.2f} "
            f"({q['accuracy_change'] * 100:+.2f}), {q['changed_predictions']} predictions changed"
        )
    to_stdout(msg + "\n")
    return 0


def register(sub: Any) -> None:
    x = sub.add_parser(
        "export",
        help="export a run to an ONNX artifact directory, parity-checked (needs absa[train])",
    )
    x.add_argument("--run", type=given, required=True, help="a training run directory (required)")
    x.add_argument(
        "--out", type=given, required=True, help="the artifact directory to create (required)"
    )
    x.add_argument(
        "--quantize",
        choices=["int8", "int8-embeddings"],
        help="int8: onnxruntime dynamic quantisation of every weight; int8-embeddings: the "
        "word-vector table alone, weights only, so an item's answer does not depend on its "
        "batch (default: none, fp32)",
    )
    x.add_argument("--name", type=given_name, help="model name (default: the preset's name)")
    x.add_argument("--version", type=given_name, help="model version (default: a UTC timestamp)")
    x.add_argument(
        "--no-calibrate",
        action="store_true",
        help="export the network's own probabilities (default: fit a temperature on the "
        "run's dev set and apply it in the graph)",
    )
    x.add_argument(
        "--top-map",
        action="store_true",
        help="after the temperature, fit a top-label map on the dev set (isotonic, applied "
        "by the runtime; no prediction changes): for a model whose surest answers a "
        "temperature leaves under-confident. Needs at least 500 dev items (default: the "
        "temperature alone)",
    )
    x.add_argument(
        "--domain-temperature",
        metavar="NAME",
        type=given_name,
        help="after the temperature, one of its own for requests that read like the domain "
        "--domain-files make (a word classifier fitted on the run's training sentences, "
        "stored in the artifact; no prediction changes): for a domain the global temperature "
        "leaves over-confident, as laptop reviews. Needs 100 dev items that read as it; "
        "aspect-term models only (default: none, one temperature for every request)",
    )
    x.add_argument(
        "--domain-files",
        action="extend",
        nargs="+",
        type=given,
        metavar="FILE",
        help="with --domain-temperature: the run's training files whose sentences are the "
        "domain (default: none)",
    )
    x.add_argument(
        "--expand-vocab",
        metavar="VECTORS",
        help="a GloVe-format vectors file: its words the run lacks get rows in the tuned "
        "table through a linear map fitted on the trained words, and so do words training "
        "never saw (default: the run's vocabulary as it is)",
    )
    x.add_argument(
        "--expand-top-k",
        type=int,
        metavar="N",
        help="with --expand-vocab: only the file's first N words (GloVe files are in "
        "frequency order; default: all)",
    )
    x.set_defaults(func=cmd_export)
