"""absa train (and absa presets): a model trained on labelled files into a run directory (needs
``absa[train]``)."""

from __future__ import annotations

import argparse
import logging
import math
import shlex
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from absa.cli.common import (
    STOP_SIGNAL,
    STOPPED,
    CLIError,
    Stopped,
    check_config,
    check_writable,
    checkpoint_on_sigterm,
    claim_out,
    given,
    say,
    to_stdout,
)
from absa.cli.data import data_info, of_categories, read_data

if TYPE_CHECKING:
    from absa.training.presets import TrainConfig
    from absa.training.records import Labelled, ReadResult
    from absa.training.train import RunResult

log = logging.getLogger("absa")
#: how train's --dev and --eval records of a category the training data lacks are logged
LACKED = "records of {} of a category --train lacks"


def _overlaps(
    examples: Sequence[Labelled],
    dev: Sequence[Labelled] | None,
    dev_files: Sequence[str],
    evals: Mapping[str, ReadResult],
    info: dict,
) -> dict[str, dict]:
    """--dev and each --eval compared with the training data by sentence (as retrain and
    --exclude compare them), and each --eval with --dev: a WARNING for each that shares
    sentences (not refused: it is sometimes meant), and the counts in ``info`` (run.json's
    data: ``dev_overlap``, ``eval_overlap``). ``examples``: what trains, with the dev split
    a run without --dev holds out of it. Returns each --eval's counts, for its report."""
    from absa.training.overlap import sentence_overlap, sentences_of

    trained = sentences_of(examples)
    selected = sentences_of(dev) if dev_files and dev is not None else None
    if selected is not None:
        shared = sentence_overlap(dev or [], trained)
        info["dev_overlap"] = {"train": shared}
        if shared["sentences"]:
            log.warning(
                "--dev %s: %d of its %d sentences are also in the training data: its score, "
                "which early stopping and the exported epoch follow, is partly on what the "
                "model learnt",
                " ".join(dev_files),
                shared["sentences"],
                shared["of"],
            )
    out: dict[str, dict] = {}
    for path, read in evals.items():
        out[path] = {"train": sentence_overlap(read.examples, trained)}
        if selected is not None:
            out[path]["dev"] = sentence_overlap(read.examples, selected)
        for part, what, why in (
            ("train", "the training data", "what the model learnt"),
            ("dev", "--dev", "the data its epoch was selected on"),
        ):
            overlap = out[path].get(part)
            if overlap and overlap["sentences"]:
                log.warning(
                    "--eval %s: %d of its %d sentences are also in %s: its score is partly on %s",
                    path,
                    overlap["sentences"],
                    overlap["of"],
                    what,
                    why,
                )
    if out:
        info["eval_overlap"] = out
    return out


def _warn_missing_labels(examples: Sequence[Labelled], labels: Sequence[str]) -> None:
    """A WARNING naming each of the model's ``labels`` the training data has no example of
    (not refused, as retrain's ``check_labels`` refuses it: a run may mean it)."""
    from absa.training.readers import missing_labels

    missing, counts = missing_labels(examples, labels)
    if missing:
        log.warning(
            "the training data has no %s examples (labels found: %s): the model can never "
            "learn to predict %s",
            ", ".join(repr(m) for m in missing),
            counts,
            "it" if len(missing) == 1 else "them",
        )


def _read_some(paths: Sequence[str], skip_invalid: bool, task: str, flag: str) -> ReadResult:
    """``read_data``, refusing files that give no valid example (every record skipped): an empty
    --dev was replaced by a split of --train, an empty --eval reported n = 0 as a result."""
    res = read_data(paths, skip_invalid, task)
    if not res.examples:
        raise CLIError(
            f"no valid examples in {flag} {' '.join(paths)} ({len(res.skipped)} invalid, skipped)"
        )
    return res


def _read_exclude(paths: Sequence[str], task: str) -> dict[str, list]:
    """Each --exclude file's examples, read by the reader of ``task`` (a category test file
    read as aspect terms gave nothing, and nothing was excluded), and the records it passed
    over that name a sentence (a label it does not know, offsets that miss the aspect): their
    sentences are test sentences all the same. A file that gives no valid record at all is
    refused: it is not --task data, and its "sentences" would be guesses."""
    out: dict[str, list] = {}
    for path in paths:
        res = read_data([path], True, task)
        if not res.examples:
            first = res.skipped[0] if res.skipped else None
            why = f"; first: {first.source}: {first.reason}" if first else ""
            raise CLIError(
                f"--exclude {path}: no sentence to exclude read from it as --task {task} data "
                f"({len(res.skipped)} invalid record(s){why})"
            )
        named = [r for r in res.skipped if r.text is not None]
        if named:
            log.warning(
                "--exclude %s: %d invalid record(s) (first: %s: %s); their sentences are "
                "excluded all the same",
                path,
                len(named),
                named[0].source,
                named[0].reason,
            )
        out[path] = [*res.examples, *named]
    return out


#: options that end a session of a run or go on with one, or say how it reports: not what
#: it trains, so not in the command that reproduces it
SESSION = ("resume", "stop_after", "quiet")


def command_of(args: argparse.Namespace, skip: Sequence[str] = SESSION) -> str:
    """The ``absa`` command ``args`` were parsed from (its options in the parser's order,
    files named as run.json names them), less ``skip``: what run.json and an artifact's
    card give as the command that makes them again."""
    from absa.training.provenance import ROOT, portable

    # run from the checkout's root, the command names files as the records do (beside the
    # checkout: relative to it); from elsewhere, as given, after a cd to where it ran: a
    # relative path given there and one rewritten to the checkout could not both resolve
    here = Path.cwd().resolve()
    at_root = here == ROOT.resolve()

    def word(v: object) -> str:
        return portable(v) if at_root and isinstance(v, str) and Path(v).is_absolute() else str(v)

    out = ["absa", args.command]
    for key, value in vars(args).items():
        if key in (*skip, "command", "func", "verbose") or value is None or value is False:
            continue
        out.append("--" + key.replace("_", "-"))
        if value is not True:
            out += [word(v) for v in value] if isinstance(value, list) else [word(value)]
    return shlex.join(out) if at_root else f"cd {shlex.quote(str(here))} && {shlex.join(out)}"


#: run.json's file records that ``_finished_alike`` compares with the files given now
_RECORDED = ("train", "dev", "config", "train_more", "exclude", "transfer")


def _finished_alike(out: Path, args: argparse.Namespace) -> bool:
    """Whether the finished run in ``out`` was trained by this very command (its recorded
    ``reproduce``) on files with the same bytes: ``--resume`` on it, a job restarted after
    its run was written (a SIGTERM in the instant after, a pod evicted), has nothing left to
    do, where it was refused and the job failed for good."""
    from absa.training.provenance import file_info
    from absa.training.rundir import read_info

    try:
        info = read_info(out)
    except (OSError, ValueError):
        return False
    if str(info.get("reproduce") or "").split("\n")[0] != command_of(args):
        return False
    data = info.get("data") or {}
    for key in _RECORDED:
        given = getattr(args, key, None)
        given = [given] if isinstance(given, str) else list(given or [])
        recorded = [r.get("sha256") for r in data.get(key) or [] if isinstance(r, dict)]
        try:
            now = [r["sha256"] for r in file_info(given)] if given else []
        except (OSError, ValueError):  # a file gone: the run is told as before
            return False
        if now != recorded:
            return False
    return True


def cmd_train(args: argparse.Namespace) -> int:
    if args.threads is not None and args.threads < 1:  # torch's own words came after the data
        raise CLIError(f"--threads is at least 1, not {args.threads}")
    from absa.training.presets import MAX_SEED

    for flag, seed in (("--seed", args.seed), ("--dev-seed", args.dev_seed)):
        if seed is not None and not 0 <= seed <= MAX_SEED:  # numpy's words named no flag
            raise CLIError(f"{flag} is from 0 to {MAX_SEED}, not {seed}")
    if args.epochs is not None and args.epochs < 1:  # the config's words named no flag
        raise CLIError(f"--epochs is at least 1, not {args.epochs}")
    if args.task == "extract" and (args.resume or args.stop_after is not None):
        raise CLIError("--resume and --stop-after are for --task terms and category")
    if args.task != "extract" and args.heldout_empty is not None:  # read by extract alone
        raise CLIError("--heldout-empty is for --task extract")
    if args.task == "extract":
        from absa.cli.extract import cmd_train_extract

        return cmd_train_extract(args)
    if args.stop_after is not None and not 0 <= args.stop_after < math.inf:  # nan: never
        raise CLIError(f"--stop-after is a number of minutes, >= 0, not {args.stop_after}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"{out} is a file; train into a new directory")
    # --out is this command's from before its checks to its end: a second run into it passed
    # them (the directory is empty till the first checkpoint), and the last writer won
    with claim_out(out, "absa train", "train into another directory"):
        return _train_into(args, out)


def _train_into(args: argparse.Namespace, out: Path) -> int:
    """``absa train`` of --task terms or category into ``out``, claimed (``claim_out``)."""
    from dataclasses import replace

    from absa.training.evaluate import evaluate
    from absa.training.metrics import format_report
    from absa.training.presets import load_config
    from absa.training.rundir import add_eval
    from absa.training.train import fit

    if args.resume and out.is_dir() and not (out / "checkpoint.pt").exists():
        from absa.errors import first_few
        from absa.training.rundir import foreign_files

        other = foreign_files(out)
        if other:  # no checkpoint: training from epoch 1 would write over them
            raise CLIError(
                f"{out} holds files that are not a training run's ({first_few(other)}): "
                "--resume goes on in a run's own directory; train into a new directory"
            )
    if not args.resume and out.exists() and any(out.iterdir()):
        # a finished run would be overwritten, or a killed one left half old, half new
        raise CLIError(f"{out} exists; train into a new directory, or go on with --resume")
    if args.resume and (out / "run.json").is_file() and not (out / "checkpoint.pt").exists():
        if _finished_alike(out, args):  # a job restarted after its run was written
            to_stdout(f"the run in {out} is finished (this command, these files): nothing to do\n")
            return 0
        # trained to the end: --resume would start it over, with whatever data it is given
        raise CLIError(
            f"{out} holds a finished run (run.json, no checkpoint): nothing to go on with; "
            f"train into a new directory, or measure it: absa evaluate --model "
            f"{shlex.quote(str(out))} --data FILE"
        )
    check_config(args.config)
    preset = load_config(Path(args.config) if args.config else None, args.preset)
    over = {
        k: v
        for k, v in (
            ("seed", args.seed),
            ("dev_seed", args.dev_seed),
            ("epochs", args.epochs),
            ("threads", args.threads),
            ("device", args.device),
            ("precision", args.precision),
        )
        if v is not None
    }
    if over:
        preset = replace(preset, train=replace(preset.train, **over))
    task = args.task
    if args.train_more and task != "terms":
        raise CLIError("--train-more is for --task terms")
    if args.dev_from_train and (args.dev or not args.train_more):
        raise CLIError("--dev-from-train is for --train-more without --dev")
    if args.transfer and task != "terms":
        raise CLIError("--transfer is for --task terms")
    if args.transfer and not preset.train.teacher:
        raise CLIError("--transfer needs a teacher to label it (train.teacher in --config)")
    train = _read_some(args.train, args.skip_invalid, task, "--train")
    dev_read = _read_some(args.dev, args.skip_invalid, task, "--dev") if args.dev else None
    dev = dev_read.examples if dev_read is not None else None
    if task == "category":
        from absa.training.categories import category_preset
        from absa.training.category_readers import categories_of, folded
        from absa.training.records import category_examples

        folds = folded(category_examples(train.examples))  # "FOOD" and "food": one category
        train.examples = list(folds)
        categories = categories_of(folds)
        preset = category_preset(preset, categories)
        if dev_read is not None:
            of_categories(dev_read, categories, args.skip_invalid, LACKED.format("--dev"))
            if not dev_read.examples:
                raise CLIError("--dev: no record of a category --train has")
            dev = dev_read.examples
    info = {
        "train": data_info(args.train),
        "dev": data_info(args.dev or []),
        "config": data_info([args.config] if args.config else []),  # the command names it
        "skipped_invalid": len(train.skipped),
        "skipped_invalid_dev": len(dev_read.skipped) if dev_read is not None else 0,
    }
    excluded: list[Labelled] = []
    examples = train.examples
    dev_source = "file"
    if args.train_more:
        examples, excluded = _train_more(args, examples, info)
        if args.dev_from_train:
            examples, dev, dev_source = _dev_from_train(examples, info, preset.train)
    elif args.exclude:
        from absa.training.overlap import drop_overlap

        excluded = [e for ex in _read_exclude(args.exclude, task).values() for e in ex]
        examples, dropped = drop_overlap(examples, excluded)
        info["exclude"] = data_info(args.exclude)
        info["excluded_overlap"] = dropped
        log.info("dropped %d training examples whose sentence occurs in --exclude files", dropped)
    transfer = _transfer(args, info, excluded) if args.transfer else []
    if excluded:
        examples, dev, transfer = _last_look(examples, dev, transfer, excluded, info)
        if not examples:  # a network "trained" on nothing, and "run written"
            raise CLIError(
                "every training sentence is in an --exclude file: nothing left to train on"
            )
    _warn_missing_labels(examples, preset.model.labels)
    if dev is not None:  # a split fit holds out is looked at there
        from absa.training.train_data import warn_one_label

        warn_one_label(dev, f"--dev {' '.join(args.dev)}" if args.dev else "the held-out split")
    # read now: a missing or bad --eval file found after hours of training lost the report
    evals = {
        path: _read_some([path], args.skip_invalid, task, "--eval") for path in args.eval or []
    }
    if task == "category":  # named as the model will name them, or refused now, not after
        for path, read in evals.items():
            of_categories(read, categories, args.skip_invalid, LACKED.format(path))
            if not read.examples:
                raise CLIError(f"{path}: no record of a category --train has")
    # the held-out split of a run with --dev-from-train is training data all the same
    trained = examples if dev_source == "file" else [*examples, *(dev or [])]
    overlap = _overlaps(trained, dev, args.dev or [], evals, info)
    check_writable(out)  # a read-only volume found after the first epoch cost the epoch
    result = None  # fit's, once it has returned: the run is whole from then on
    reports: dict[str, dict] = {}
    try:
        with checkpoint_on_sigterm() as asked:
            result = fit(
                examples,
                dev,
                preset,
                out,
                data_info=info,
                progress=not args.quiet,
                preset_name=preset.name,
                transfer=transfer,
                dev_source=dev_source,
                resume=args.resume,
                stop_after=None if args.stop_after is None else args.stop_after * 60,
                reproduce=command_of(args),
            )
        if result.stopped:
            by = asked[0] if asked else "--stop-after"
            to_stdout(
                f"stopped after {len(result.history)} whole epoch(s) ({by}); the run in "
                f"{result.run_dir} is not complete: the same command with --resume goes on\n"
            )
            return STOPPED
        if asked and evals:  # asked as the run was written, after its last batch: not begun
            _eval_cut_short(result.run_dir, evals)
            return 128 + signal.Signals[asked[0]].value
        for path, read in evals.items():
            reports[path] = {
                **evaluate(result.run_dir, read.examples),
                "file": data_info([path])[0],  # which bytes were measured
                "skipped_invalid": len(read.skipped),
                "overlap": overlap[path],  # its sentences in the training data, and --dev
            }
            log.info("%s\n%s", path, format_report(reports[path]))
        add_eval(result.run_dir, reports)
        dev_rep = result.dev
        to_stdout(
            f"run written to {result.run_dir}: best epoch {result.best_epoch}, dev accuracy "
            f"{dev_rep['accuracy'] * 100:.2f}, dev macro-F1 {dev_rep['macro_f1'] * 100:.2f}\n"
        )
    except KeyboardInterrupt:
        # Ctrl-C, a second SIGTERM while training: stopped at once, not at a batch's end; a
        # SIGTERM once fit returned (its handler given back, absa's stops the command) or while
        # --eval runs or is recorded: the run is whole, its --eval report is not (or is, and
        # only the summary was lost)
        _interrupted(out, result, evals)
        raise
    except Exception:
        if result is None or result.stopped or not STOP_SIGNAL:
            raise
        # the stop (Stopped, raised by the signal's handler) met inside torch came out of it
        # as another error: "could not determine the shape of object type
        # 'torch.storage.UntypedStorage'" (CI, a loaded machine), and no word of the run
        _interrupted(out, result, evals)
        raise Stopped from None
    return 0


def _last_look(
    examples: list, dev: list | None, transfer: list, excluded: list, info: dict
) -> tuple[list, list | None, list]:
    """--exclude's sentences looked for once more in train, dev and the transfer set, their
    brackets in either spelling (``bracket_free``: Rest14's test file writes "-LRB-", MAMS
    train "(": one Rest14 test sentence reached training that way before the first look
    compared sentences so too). What it finds now is a --dev file's: train and the transfer
    set were looked at already, by the same key, before any split, so a teacher and its
    students (--dev-from-train) hold out the same dev split."""
    from absa.training.overlap import bracket_free, drop_overlap

    examples, n_train = drop_overlap(examples, excluded, key=bracket_free)
    n_dev = 0
    if dev is not None:
        dev, n_dev = drop_overlap(dev, excluded, key=bracket_free)
        if not dev:
            raise CLIError("every dev sentence is in an --exclude file: nothing left to select on")
    transfer, n_transfer = drop_overlap(transfer, excluded, key=bracket_free)
    # dev: a --dev file's sentences, looked at here the first time (in any spelling)
    info["excluded_bracket_forms"] = {"train": n_train, "dev": n_dev, "transfer": n_transfer}
    if n_train + n_transfer:
        log.warning(
            "dropped %d training and %d transfer example(s) whose sentence is in an "
            "--exclude file with its brackets spelt the other way (-LRB- or \"(\")",
            n_train, n_transfer,
        )  # fmt: skip
    if n_dev:
        log.warning("dropped %d --dev example(s) whose sentence is in an --exclude file", n_dev)
    return examples, dev, transfer


def _train_more(args: argparse.Namespace, examples: list, info: dict) -> tuple[list, list]:
    """--train, then each --train-more file without the sentences an earlier file gave, all
    without --exclude's sentences (training/union.py); what was dropped goes in run.json.
    Returns the examples kept and --exclude's examples."""
    from absa.training.provenance import portable
    from absa.training.records import term_examples
    from absa.training.union import combine_more

    # files named as run.json names them elsewhere (beside the checkout: relative)
    reads = [_read_some([p], args.skip_invalid, "terms", "--train-more") for p in args.train_more]
    more = [
        (portable(p), term_examples(r.examples))
        for p, r in zip(args.train_more, reads, strict=True)
    ]
    read = _read_exclude(args.exclude or [], "terms")  # --train-more: --task terms only
    tests = {portable(p): ex for p, ex in read.items()}
    kept, reports = combine_more(examples, more, tests)
    info["train_more"] = data_info(args.train_more)
    info["skipped_invalid_more"] = [len(r.skipped) for r in reads]  # per file, in order
    info["exclude"] = data_info(args.exclude or [])
    info["excluded_overlap"] = sum(r.test_overlap for r in reports)
    info["combined"] = [r.to_dict() for r in reports]
    return kept, [e for ex in tests.values() for e in ex]


def _dev_from_train(examples: list, info: dict, tcfg: TrainConfig) -> tuple[list, list, str]:
    """The dev split held out of --train's examples alone (``examples`` starts with them, as
    ``_train_more`` returns them): the split a run without --train-more holds out, so more
    data leaves dev as it was. Returns train (the rest and every --train-more example), dev
    and how dev was made."""
    from absa.training.train_data import split_dev_of_first

    n = info["combined"][0]["kept"]
    train, dev = split_dev_of_first(examples, n, tcfg.dev_fraction, tcfg.split_seed)
    how = f"{tcfg.dev_fraction:.0%} of --train (not --train-more) held out with seed "
    return train, dev, how + str(tcfg.split_seed)


def _transfer(args: argparse.Namespace, info: dict, excluded: list) -> list:
    """--transfer's unlabelled aspects, less those of a sentence in ``excluded`` (--exclude's
    examples)."""
    from absa.training.overlap import drop_overlap
    from absa.training.transfer_set import read_jsonl

    kept, dropped = drop_overlap(read_jsonl(args.transfer), excluded)
    info["transfer"] = data_info(args.transfer)
    info["transfer_excluded"] = dropped
    log.info(
        "transfer set: %d unlabelled aspect(s) (%d dropped: their sentence is in --exclude)",
        len(kept),
        dropped,
    )
    return kept


def _interrupted(out: Path, result: RunResult | None, evals: Mapping[str, object]) -> None:
    """Says what an interrupted ``absa train`` left in ``out``: a checkpoint to resume from
    (``result`` None: fit had not returned; or stopped), or a whole run and how to get the
    --eval report it lost."""
    if result is not None and not result.stopped:
        if evals and not _recorded(result.run_dir, evals):
            _eval_cut_short(result.run_dir, evals)
        else:  # nothing after the run (and its reports) but the summary: whole all the same
            say(f"absa train: the run in {result.run_dir} is written")
        return
    from absa.training.checkpoint import CHECKPOINT

    if (out / CHECKPOINT).is_file():
        say(
            f"absa train: interrupted: the run in {out} is not complete; its last "
            "checkpoint is kept: the same command with --resume goes on"
        )


def _recorded(run_dir: Path, evals: Mapping[str, object]) -> bool:
    """Whether every --eval report is in the run's metrics.json (``add_eval`` wrote them)."""
    from absa.training.rundir import read_metrics

    return set(evals) <= set(read_metrics(run_dir).get("eval", {}))


def _eval_cut_short(run_dir: Path, evals: Mapping[str, object]) -> None:
    """Says that train's run is whole, its --eval report not, and how to get it."""
    files = " ".join(shlex.quote(p) for p in evals)
    say(
        f"absa train: the run in {run_dir} is written; --eval was cut short, and "
        f"`absa evaluate --model {shlex.quote(str(run_dir))} --data {files}` gives its report"
    )


def cmd_presets(args: argparse.Namespace) -> int:
    from absa.training.presets import PRESETS

    for name, preset in PRESETS.items():
        to_stdout(f"{name:<22} {preset.about}\n")
    return 0


def register(sub: Any) -> None:
    t = sub.add_parser("train", help="train a model and write a run directory (needs absa[train])")
    t.add_argument(
        "--train",
        type=given,
        action="extend",
        nargs="+",
        required=True,
        help="training files: SemEval XML, 3-line, JSONL or CSV (required)",
    )
    t.add_argument(
        "--dev",
        type=given,
        action="extend",
        nargs="+",
        help="dev files (default: a seeded 10%% of the training data)",
    )
    t.add_argument(
        "--task",
        choices=["terms", "category", "extract"],
        default="terms",
        help="terms: sentiment towards aspect terms in the text; category: towards aspect "
        "categories (SemEval XML aspectCategories or SemEval-2016 Opinions, or JSONL "
        "text/category/label), v_a a learned vector per category; extract: the aspect term "
        "tagger (every aspect term of the training sentences, conflict ones too; --config "
        "takes {model: TaggerConfig, train: TagTrainConfig}) (default: terms)",
    )
    g = t.add_mutually_exclusive_group()
    g.add_argument(
        "--preset",
        help="a named preset, see `absa presets`; --task extract: fast, crf or accurate "
        "(default: fast)",
    )
    g.add_argument(
        "--config",
        help="a JSON/TOML config {preset, model: {...}, train: {...}} (default: none)",
    )
    t.add_argument("--out", type=given, required=True, help="the run directory to write (required)")
    t.add_argument(
        "--heldout-empty",
        type=int,
        default=None,
        help="--task extract without --dev: aspect-free training sentences kept out of "
        "training and dev, for a precision check (written to heldout_empty.jsonl) "
        "(default: 200)",
    )
    t.add_argument(
        "--eval",
        type=given,
        action="extend",
        nargs="+",
        help="files to evaluate the final model on, never used to select (default: none)",
    )
    t.add_argument(
        "--exclude",
        type=given,
        action="extend",
        nargs="+",
        help="drop training sentences that occur in these files, e.g. test sets (default: none)",
    )
    t.add_argument(
        "--unlabelled",
        type=given,
        action="extend",
        nargs="+",
        help="--task extract with a teacher: files whose sentence texts (labels unused) the "
        "teacher tags as extra soft targets; sentences in train, dev or --exclude are dropped "
        "(default: none)",
    )
    t.add_argument(
        "--transfer",
        type=given,
        action="extend",
        nargs="+",
        help="with a teacher: JSONL files of unlabelled aspects (text, start, end; e.g. from "
        "benchmarks/transfer_set.py) that the teacher labels; its probabilities are their only "
        "target; aspects of dev or --exclude sentences are dropped (default: none)",
    )
    t.add_argument(
        "--train-more",
        type=given,
        action="extend",
        nargs="+",
        help="more training files, after --train; from these, a sentence an earlier file "
        "already has is dropped (one annotation of a sentence, and no sentence on both sides "
        "of the dev split) (default: none)",
    )
    t.add_argument(
        "--dev-from-train",
        action="store_true",
        help="with --train-more and no --dev: hold the dev split out of --train's examples "
        "alone, the same split a run without --train-more holds out (default: out of all)",
    )
    t.add_argument(
        "--seed", type=int, help="random seed, 0 to 2**32 - 1 (default: the preset's, 1)"
    )
    t.add_argument(
        "--dev-seed",
        type=int,
        help="seed of the dev split held out of --train when no --dev is given, e.g. a "
        "distilled student's other seeds keeping their teacher's split (default: --seed)",
    )
    t.add_argument("--epochs", type=int, help="training epochs (default: the preset's)")
    t.add_argument(
        "--resume",
        action="store_true",
        help="go on from the checkpoint --out holds (the run that stopped: same data, config "
        "and command), with the numbers of a run never stopped; none: from epoch 1. A "
        "checkpoint is written after each epoch and every 30 minutes within one, so a killed "
        "run loses at most that (default: off, a new run)",
    )
    t.add_argument(
        "--stop-after",
        type=float,
        metavar="MINUTES",
        help="end at the first epoch's end past MINUTES, keeping the checkpoint for "
        "--resume (exit status 75); for runs longer than the machine is yours (default: none)",
    )
    t.add_argument(
        "--threads",
        type=int,
        help="torch CPU threads (default: the preset's, 2; --task extract: 1)",
    )
    t.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        help="torch device; auto: CUDA when torch sees a GPU; not for --task extract, which "
        "trains on the CPU (default: the preset's, auto)",
    )
    t.add_argument(
        "--precision",
        choices=["fp32", "bf16"],
        help="bf16: the training step in bfloat16 autocast (weights and optimiser float32); a "
        "fine-tuned transformer's step took 0.5-0.7x fp32's on a CPU with AMX (mpnet 0.52x, "
        "MiniLM 0.69x: docs/benchmarks.md), on a CPU without bfloat16 instructions longer; "
        "may change between sessions of one run, as --device may; not for --task extract "
        "(default: the preset's, fp32)",
    )
    t.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip bad records and report them (default: stop at the first)",
    )
    t.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar, and a log line every 10 minutes of an epoch instead (default: a "
        "bar, on a terminal only)",
    )
    t.set_defaults(func=cmd_train)


def register_presets(sub: Any) -> None:
    pr = sub.add_parser("presets", help="list the presets")
    pr.set_defaults(func=cmd_presets)
