"""A training run -> an artifact directory: load the run, hand its network, dev set and
provenance to ``absa.model.export`` (which owns ONNX, the parity check and quantisation)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from absa.model.artifact import refuse_existing, sha256_file
from absa.model.export import DomainSentences, export
from absa.training.overlap import HasText, bracket_free
from absa.training.provenance import ROOT, code_version, portable
from absa.training.readers import read_many
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
    domain: tuple[str, Sequence[str | Path]] | None = None,
) -> dict:
    """Export the run's best weights to ``out_dir`` (parity-checked on the run's dev set,
    with a temperature fitted on it unless ``calibrate`` is off, and with ``top_map`` a
    top-label map after it); returns the artifact's metadata. ``name`` defaults to the
    run's preset. ``expand_vocab``: a GloVe-format file whose first ``expand_top_k`` words
    the run lacks get rows mapped into its tuned table (``training/vocab_expansion.py``).
    ``command``: the one exporting (``absa export``'s), given after the run's own in the
    metadata's ``reproduce`` where the run records how it was trained. ``domain``: a name
    and some of the run's training files, whose sentences make a domain with a temperature
    of its own (``domain_sentences``)."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    refuse_existing(out_dir)  # before loading the run and expanding its vocabulary
    run = load_run(run_dir)
    dev = read_dev_examples(run_dir)
    if not dev:  # export's own message cannot name the file
        raise ValueError(f"{run_dir / DEV}: no dev examples; export checks parity on them")
    if domain and run.model_config.is_category:  # its files hold category rows, not terms
        raise ValueError(
            f"{run_dir}: a category model: --domain-temperature is for aspect-term models"
        )
    sentences = domain_sentences(run.info.get("data") or {}, dev, *domain) if domain else None
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
        domain=sentences,
    )


def domain_sentences(
    data: dict, dev: Sequence[HasText], name: str, files: Sequence[str | Path]
) -> DomainSentences:
    """A run's training sentences (``data``: the files its record lists, ``run.json``'s or an
    artifact's ``train.data``; its train and train_more files, read again and checked
    against their recorded sha256; dev's sentences left out, and those of its --exclude
    files: test sets), each in the domain where one of ``files`` holds it. ValueError for a
    file that is none of the run's training files, or one that changed since the run read
    it."""
    entries = [*(data.get("train") or []), *(data.get("train_more") or [])]
    recorded = {_located(e["path"]): e for e in entries}
    wanted = {_located(f) for f in files}
    stray = sorted(str(f) for f in wanted if f not in recorded)
    if stray:
        raise ValueError(
            f"domain {name!r}: {', '.join(stray)} is none of the run's training files "
            f"({', '.join(e['path'] for e in entries) or 'it records none'})"
        )
    held = {e.text for e in dev}
    excluded = _checked(data.get("exclude") or [])
    tests = {bracket_free(e.text) for e in read_many(excluded).examples} if excluded else set()
    inside: dict[str, bool] = {}
    for path in _checked(entries):
        for e in read_many([str(path)]).examples:
            if e.text not in held and bracket_free(e.text) not in tests:
                inside[e.text] = inside.get(e.text, False) or path in wanted
    used = [{"path": portable(p), "sha256": recorded[p]["sha256"]} for p in sorted(wanted)]
    return DomainSentences(name, list(inside), list(inside.values()), used)


def _checked(entries: Sequence[dict]) -> list[Path]:
    """The recorded files, located, each checked against its recorded sha256."""
    out = []
    for entry in entries:
        path = _located(entry["path"])
        if not path.is_file() or sha256_file(path) != entry["sha256"]:
            raise ValueError(f"{entry['path']}: gone or changed since the run read it")
        out.append(path)
    return out


def _located(path: str | Path) -> Path:
    """A recorded or given data path, resolved: a recorded one is relative to the checkout
    (``provenance.portable``) or to where the run was started."""
    p = Path(path)
    return (ROOT / p).resolve() if not p.is_absolute() and (ROOT / p).exists() else p.resolve()


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
