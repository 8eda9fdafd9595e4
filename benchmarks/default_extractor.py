"""Make the shipped extractor (model/artifacts/extractor/) from a benchmark run.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/extraction.py --setups union \
        --config benchmarks/configs/extract-crf.json --tag=-crf
    python benchmarks/default_extractor.py --setup union --tag=-crf \
        --config benchmarks/configs/extract-crf.json   # exports runs/bench-extract/union-crf__s1

The export is ``absa export`` (parity-checked); the test-set scores measured by
benchmarks/extraction.py go into the metadata and the model card, with the command that
reproduces the run, and every file's checksum is recorded again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import (  # noqa: E402
    EXTRACTOR_KIND,  # noqa: E402
    read_metadata,
    record_checksums,
    write_metadata,
)
from absa.model.extractor import DEFAULT_EXTRACTOR_DIR  # noqa: E402
from absa.model.extractor_card import write_extractor_card  # noqa: E402
from absa.training.tagging_run import export_tag_run  # noqa: E402

REPRODUCE = (
    "OMP_NUM_THREADS=1 python benchmarks/extraction.py --setups {setup} --seeds {seed}{opts}\n"
    "python benchmarks/default_extractor.py --setup {setup} --seed {seed}{opts}"
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--setup", default="union")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--config", help="the benchmark run's --config (recorded in the command)")
    p.add_argument("--tag", default="", help="the benchmark run's --tag (a config's name)")
    p.add_argument("--version", default="1.0.0")
    p.add_argument("--keep", type=Path, default=Path("runs/bench-extract"))
    p.add_argument("--out", type=Path, default=DEFAULT_EXTRACTOR_DIR)
    args = p.parse_args()
    name = f"{args.setup}{args.tag}__s{args.seed}"
    results = json.loads(
        (Path(__file__).parent / "results" / "extraction" / f"{name}.json").read_text()
    )
    shutil.rmtree(args.out, ignore_errors=True)
    export_tag_run(args.keep / name, args.out, name="absa-extractor", version=args.version)
    meta = read_metadata(args.out, EXTRACTOR_KIND)
    tests = {f"{t} test": rep for t, rep in results["test"].items()}
    meta["metrics"] = {"dev": results["dev"], **tests}  # all with the current decoder
    meta["benchmark"] = {k: results[k] for k in ("heldout_empty", "end_to_end", "latency")}
    opts = (f" --config {args.config}" if args.config else "") + (
        f" --tag={args.tag}" if args.tag else ""
    )
    meta["reproduce"] = REPRODUCE.format(setup=args.setup, seed=args.seed, opts=opts)
    meta["source_run"] = str(args.keep / name)
    write_extractor_card(args.out, meta)
    record_checksums(meta, args.out)
    write_metadata(args.out, meta)
    size = sum(f.stat().st_size for f in args.out.iterdir())
    sys.stdout.write(f"{args.out}: {size / 1e6:.1f} MB\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
