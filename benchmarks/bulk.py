"""Bulk scoring: Ray with 1 and 2 scoring actors, single-process per core, and the peak memory
of single-process Parquet scoring on 1M rows.

Rows are real SemEval-2014 training sentences (restaurants and laptops, from ../shared/data
or $ABSA_DATA_DIR) with their aspects, repeated with an ``id`` up to the size asked for;
they are generated under --work (never in the repository) and reused. Each config runs in
a fresh process (a fresh local Ray instance for the Ray configs) and writes one result file,
benchmarks/results/bulk/<config>.json, with the load average before and after (other jobs on
the machine skew rows/s: compare runs taken on a quiet machine). A config whose file exists
is skipped, so an interrupted run resumes; --force reruns.

    python benchmarks/bulk.py                       # every config (~15 min on 2 idle cores)
    python benchmarks/bulk.py --configs ray-w1 ray-w2

Configs: ``single-200k`` (one process, onnxruntime on 1 thread: rows/s per core),
``ray-w1-200k`` / ``ray-w2-200k`` (a local Ray instance, 1 or 2 actors, 1 thread each),
``ray-w2-2k`` (the same on 2,000 rows: the fixed cost of a job), ``score-only-200k``
(``score_table`` on tables in memory, 1 thread: scoring alone, rows/s per core),
``ray-io-only-w2-200k`` (the Ray pipeline with a pass-through actor: reading, splitting and
writing alone), ``parquet-1m`` (`absa predict` on a 1M-row Parquet file, default threads:
peak RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.records import write_record  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "bulk"

MACHINE = "project 2-core CPU (shared with other jobs unless the load average says otherwise)"

#: config -> (engine, rows, workers)
CONFIGS: dict[str, tuple[str, int, int]] = {
    "single-200k": ("single", 200_000, 1),
    "ray-w1-200k": ("ray", 200_000, 1),
    "ray-w2-200k": ("ray", 200_000, 2),
    "ray-w2-2k": ("ray", 2_000, 2),
    "score-only-200k": ("score", 200_000, 1),
    "ray-io-only-w2-200k": ("ray-io", 200_000, 2),
    "parquet-1m": ("cli", 1_000_000, 1),
}


def make_rows(path: Path, n: int) -> Path:
    """``n`` rows of real sentences as Parquet (row groups of 64k), made once."""
    if path.is_file():
        return path
    import pyarrow as pa
    import pyarrow.parquet as pq

    from absa.training.readers import read_examples
    from benchmarks.datasets import paths

    examples = [
        e for name in ("rest14", "lap14") for e in read_examples(paths(name)["train"]).examples
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(
        tmp,
        pa.schema(
            [
                ("id", pa.int64()),
                ("text", pa.string()),
                ("aspect", pa.string()),
                ("label", pa.string()),
            ]
        ),
    ) as w:
        for s in range(0, n, 65_536):
            ids = range(s, min(n, s + 65_536))
            ex = [examples[i % len(examples)] for i in ids]
            w.write_table(
                pa.table(
                    {
                        "id": list(ids),
                        "text": [e.text for e in ex],
                        "aspect": [e.term for e in ex],
                        "label": [e.label for e in ex],
                    }
                )
            )
    tmp.replace(path)
    return path


def run_single(src: Path, dst: Path) -> dict:
    from absa.bulk.files import score_table_file
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.settings import Settings

    began = time.perf_counter()
    predictor = Predictor(Runtime.load(Settings().model_path(), device="cpu", threads=1))
    loaded = time.perf_counter()
    stats = score_table_file(predictor, src, dst, progress=False)
    end = time.perf_counter()
    return {
        "rows": stats.rows,
        "bad": stats.rows - stats.scored,
        "seconds": end - loaded,
        "startup_seconds": loaded - began,
    }


def run_ray(src: Path, dst: Path, workers: int) -> dict:
    from absa.bulk import score_with_ray

    stats = score_with_ray(src, dst, workers=workers)
    return {
        "rows": stats.rows,
        "bad": stats.bad,
        "seconds": stats.seconds,
        "startup_seconds": stats.startup_seconds,
        "files": stats.files,
    }


def run_score_only(src: Path) -> dict:
    """``score_table`` alone on tables already in memory (1 thread): scoring rows/s per core."""
    import pyarrow.parquet as pq

    from absa.bulk.columns import score_table
    from absa.model.predictor import Predictor
    from absa.model.runtime import Runtime
    from absa.settings import Settings

    table = pq.read_table(src)
    predictor = Predictor(Runtime.load(Settings().model_path(), device="cpu", threads=1))
    began = time.perf_counter()
    for start in range(0, table.num_rows, 4096):
        score_table(predictor, table.slice(start, 4096))
    return {"rows": table.num_rows, "seconds": time.perf_counter() - began}


def run_ray_io_only(src: Path, dst: Path, workers: int) -> dict:
    """The Ray job's pipeline with a pass-through actor in place of the scorer: what reading,
    splitting and writing cost on their own."""
    import ray

    from absa.bulk.ray_engine import connect

    startup = connect(workers + 1)
    began = time.perf_counter()
    ds = ray.data.read_parquet(str(src)).repartition(target_num_rows_per_block=4096)
    ds = ds.map_batches(
        PassThrough,
        batch_format="pyarrow",
        batch_size=4096,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=1,
    )
    ds.write_parquet(str(dst), min_rows_per_file=100_000)
    seconds = time.perf_counter() - began
    return {
        "rows": ray.data.read_parquet(str(dst)).count(),
        "seconds": seconds,
        "startup_seconds": startup,
    }


class PassThrough:
    def __call__(self, batch):  # type: ignore[no-untyped-def]
        return batch


def run_cli(src: Path, dst: Path) -> dict:
    """`absa predict` on Parquet in a child process: its peak RSS from the kernel."""
    absa = Path(sys.executable).with_name("absa")
    began = time.perf_counter()
    subprocess.run(
        [str(absa), "predict", "--input", str(src), "--output", str(dst), "--quiet"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - began
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    import pyarrow.parquet as pq

    return {
        "rows": pq.ParquetFile(dst).metadata.num_rows,
        "seconds": seconds,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "input_mb": round(src.stat().st_size / 2**20, 1),
    }


def child(config: str, work: Path) -> dict:
    engine, n, workers = CONFIGS[config]
    src = make_rows(work / f"rows-{n}.parquet", n)
    dst = work / f"out-{config}" / ("" if engine.startswith("ray") else "out.parquet")
    shutil.rmtree(dst if engine.startswith("ray") else dst.parent, ignore_errors=True)
    dst.parent.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    if engine == "single":
        result = run_single(src, dst)
    elif engine == "ray":
        result = run_ray(src, dst, workers)
    elif engine == "score":
        result = run_score_only(src)
    elif engine == "ray-io":
        result = run_ray_io_only(src, dst, workers)
    else:
        result = run_cli(src, dst)
    import ray

    result.update(
        config=config,
        engine=engine,
        workers=workers,
        rows_asked=n,
        rows_per_s=round(result["rows"] / result["seconds"], 1),
        rows_per_s_per_worker=round(result["rows"] / result["seconds"] / workers, 1),
        loadavg_before=[round(x, 2) for x in load_before],
        loadavg_after=[round(x, 2) for x in os.getloadavg()],
        cpus=os.cpu_count(),
        machine=MACHINE,
        python=platform.python_version(),
        ray=ray.__version__,
        command=f"python benchmarks/bulk.py --configs {config}",
        commit=_commit(),
    )
    shutil.rmtree(work / f"out-{config}", ignore_errors=True)
    return result


def _commit() -> str:
    """The checkout measured: its commit, "+dirty" when tracked files differ from it."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head.stdout.strip() + ("+dirty" if dirty else "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    p.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "absa-bench-bulk",
        help="where the generated rows and outputs go (default: %(default)s)",
    )
    p.add_argument("--force", action="store_true", help="rerun configs that have results")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    OUT.mkdir(parents=True, exist_ok=True)
    if args.child:  # one config in this fresh process: its result file, written whole
        out = OUT / f"{args.child}.json"
        tmp = out.with_suffix(".json.tmp")
        write_record(tmp, **child(args.child, args.work))
        tmp.replace(out)
        return
    for config in args.configs:
        out = OUT / f"{config}.json"
        if out.exists() and not args.force:
            print(f"{config}: done already ({out})")
            continue
        print(f"{config}: running ...", flush=True)
        cmd = [sys.executable, __file__, "--child", config, "--work", str(args.work)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"{config} failed:\n{proc.stderr[-3000:]}")
        result = json.loads(out.read_text())
        print(
            f"{config}: {result['rows']} rows in {result['seconds']:.1f} s, "
            f"{result['rows_per_s']:.0f} rows/s, load {result['loadavg_before'][0]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
