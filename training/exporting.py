"""A training run -> an artifact directory: load the run, hand its network, dev set and
provenance to ``absa.model.export`` (which owns ONNX, the parity check and quantisation)."""

from __future__ import annotations

from pathlib import Path

from absa.model.artifact import refuse_existing
from absa.model.export import export
from absa.training.provenance import code_version
from absa.training.rundir import DEV, LoadedRun, load_run, read_dev_examples

# what of run.json an artifact's metadata keeps under "train"
TRAIN_KEYS = (
    *("seed", "data", "label_counts", "n_train", "n_dev", "dev_split"),
    "teacher",  # a distilled model's teacher: path, sha256, dev leak
    "teacher_folds",  # out-of-fold targets: per fold file, its sha256, teacher and items
    "transfer",  # a transfer set's aspects the teacher labelled: given, used, its labels
    "vectors",  # a word-vector file given by path (absa vectors): its path and sha256
    "encoder",  # a transformer given by path: each of its files' sha256
    "teacher_states",  # the hint's teacher word states (absa states): how they were made
    "init_from",  # the run whose weights it started from (train.init_from): path, sha256
    "soup",  # a mean of runs' weights (benchmarks/soup.py): the parts and their sha256
    "environment",  # python, torch, numpy, the CPU or GPU it trained on: the run may be gone
    "code_versions",  # the code of every session it trained in (a resumed run may span commits)
    "sessions",  # each session's first epoch, threads, device and code (a resume may change them)
)


def export_run(
    run_dir: Path,
    out_dir: Path,
    quantize: str | None = None,
    name: str | None = None,
    version: str | None = None,
    batch: int = 32,
    calibrate: bool = True,
    top_map: bool = False,
    expand_vocab: str | Path | None = None,
    expand_top_k: int | None = None,
    command: str | None = None,
) -> dict:
    """Export the run's best weights to ``out_dir`` (parity-checked on the run's dev set,
    with a temperature fitted on it unless ``calibrate`` is off, and with ``top_map`` a
    top-label map after it); returns the artifact's metadata. ``name`` defaults to the
    run's preset. ``expand_vocab``: a GloVe-format file whose first ``expand_top_k`` words
    the run lacks get rows mapped into its tuned table (``training/vocab_expansion.py``).
    ``command``: the one exporting (``absa export``'s), given after the run's own in the
    metadata's ``reproduce`` where the run records how it was trained."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    refuse_existing(out_dir)  # before loading the run and expanding its vocabulary
    run = load_run(run_dir)
    dev = read_dev_examples(run_dir)
    if not dev:  # export's own message cannot name the file
        raise ValueError(f"{run_dir / DEV}: no dev examples; export checks parity on them")
    meta = provenance(run, run_dir)
    if meta.get("reproduce") and command:
        meta["reproduce"] += "\n" + command
    if expand_vocab is not None:
        from absa.training.vocab_expansion import expand_vocabulary

        run, meta["vocab_expansion"] = expand_vocabulary(run, expand_vocab, expand_top_k)
    return export(
        run.net,
        run.pipeline,
        run.model_config,
        dev,
        out_dir,
        meta,
        name=name or run.info.get("preset") or "absa",
        version=version,
        quantize=quantize,
        batch=batch,
        calibrate=calibrate,
        top_map=top_map,
    )


def provenance(run: LoadedRun, run_dir: Path) -> dict:
    """What an artifact records of the run it came from; ``reproduce`` where the run says
    how it was trained (``absa train``; not a run trained from Python)."""
    out = {
        "preset": run.info.get("preset"),
        "train": {k: run.info.get(k) for k in TRAIN_KEYS},
        "train_config": run.train_config.to_dict(),
        "metrics": run.metrics,
        "code_version": run.info.get("code_version"),
        "export_code_version": code_version(),  # the code that builds the graph, fits T
        "source_run": str(run_dir),
    }
    if run.info.get("reproduce"):
        out["reproduce"] = run.info["reproduce"]
    return out
