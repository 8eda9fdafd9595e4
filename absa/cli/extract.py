"""The extraction side of train / evaluate / export: ``absa train --task extract`` and
``absa evaluate`` / ``absa export`` on a tagger run or an extractor artifact."""

from __future__ import annotations

import argparse
import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from absa.cli.common import (
    CLIError,
    check_config,
    check_new_out,
    check_writable,
    claim_out,
    say,
    to_stdout,
)

if TYPE_CHECKING:
    from absa.model.tagger_config import TaggerConfig
    from absa.training.tag_config import TagTrainConfig

log = logging.getLogger("absa")

HELDOUT_EMPTY = "heldout_empty.jsonl"
PARTIAL = ".partial"  # <out>.partial: the best epoch so far of a run still training
HELDOUT_EMPTY_DEFAULT = 200  # `absa train --task extract --heldout-empty`'s default


def is_extraction_model(path: Path) -> bool:
    """A tagger run directory or an extractor artifact (not a sentiment model)."""
    from absa.model import artifact
    from absa.training.tagging_run import is_tag_run

    meta = Path(path) / artifact.METADATA
    if meta.is_file():
        try:
            return json.loads(meta.read_text(encoding="utf-8")).get("kind") == (
                artifact.EXTRACTOR_KIND
            )
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            return False
    return is_tag_run(Path(path))


def _config(path: str | None) -> tuple[dict, dict]:
    if path is None:
        return {}, {}
    check_config(path)
    from absa.training.presets import read_config_file

    try:  # about: a note, as in a preset file
        data = read_config_file(path, ("model", "train", "about"))
    except ValueError as e:
        raise CLIError(str(e)) from None
    model, train = data.get("model", {}), data.get("train", {})
    for what, table in (("model", model), ("train", train)):
        if not isinstance(table, dict):
            raise CLIError(f"{path}: {what} is a {type(table).__name__}, not a table of keys")
    return model, train


def _typed(cls: type, table: dict, where: str) -> dict:
    """``table``'s values checked against ``cls``'s field types (unknown keys are left to
    ``from_dict``, which names them)."""
    from dataclasses import fields

    from absa.model.typed import typed_fields

    known = {f.name for f in fields(cls)}
    try:
        ours = {k: v for k, v in table.items() if k in known}
        return {**table, **typed_fields(cls, ours, f"{where}.")}
    except ValueError as e:
        raise CLIError(str(e)) from None


def partial_of(out: Path) -> Path:
    """Where a run into ``out`` keeps its best epoch so far: ``OUT.partial`` beside it (of
    "run/" too, whose "run/.partial" lay inside OUT: the run's last write then failed)."""
    whole = out.resolve()
    return whole.with_name(whole.name + PARTIAL)


def cmd_train_extract(args: argparse.Namespace) -> int:
    from absa.training.tagger_build import PRESETS

    if args.preset and args.preset not in PRESETS:
        raise CLIError(
            f"--task extract: unknown preset {args.preset!r}; choose {', '.join(PRESETS)}"
        )
    out = Path(args.out)
    if not _empty_dir(out):  # an empty one is claimed (another run's claim makes one)
        check_new_out(out, "train into a new directory")
    check_writable(out.parent)  # OUT.partial goes there: at the first epoch
    # --out (and so OUT.partial) is this command's from its checks to its end, as absa
    # train's of a sentiment model: a second run into it passed them (OUT is written at the
    # end), and the two replaced each other's best epoch in OUT.partial
    with claim_out(out, "absa train", "train into another directory"):
        if not _empty_dir(out):  # written in the meantime by a run that has ended
            check_new_out(out, "train into a new directory")
        return _train_extract_into(args, out)


def _empty_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())


def _train_extract_into(args: argparse.Namespace, out: Path) -> int:
    """``absa train --task extract`` into ``out``, claimed (``claim_out``) and empty."""
    from dataclasses import replace

    from absa.cli.train import command_of
    from absa.model.tagger_config import TaggerConfig
    from absa.training.provenance import code_version, environment, file_info
    from absa.training.sentences import drop_sentences, keep_aspect_free, read_sentences, split
    from absa.training.tagger_build import PRESETS
    from absa.training.tagging import TagRun, TagTrainConfig, fit_tagger, write_sentences
    from absa.training.tagging_run import add_eval, write_tag_run

    partial = partial_of(out)
    if partial.exists():  # replaced at the first epoch, removed at the end
        raise CLIError(
            f"{partial} exists: a killed run's best epoch so far (it exports); "
            "move it away, or train into a new directory"
        )
    if args.dev and args.heldout_empty is not None:  # nothing is held out there
        raise CLIError("--heldout-empty: for a run without --dev (its dev split is held out)")
    if args.heldout_empty is None:
        args.heldout_empty = HELDOUT_EMPTY_DEFAULT
    if args.heldout_empty < 0:  # [:-5]: every aspect-free sentence but the last five
        raise CLIError(f"--heldout-empty is a number of sentences, >= 0, not {args.heldout_empty}")
    sentiment_only = {
        "--dev-seed": args.dev_seed is not None,
        "--skip-invalid": args.skip_invalid,
        "--transfer": bool(args.transfer),
        "--train-more": bool(args.train_more),
        "--dev-from-train": args.dev_from_train,
        "--device": args.device is not None,  # the tagger trains on the CPU
        "--precision": getattr(args, "precision", None) is not None,
    }
    given = [flag for flag, on in sentiment_only.items() if on]
    if given:  # they were ignored: a run without what was asked for
        raise CLIError(f"{', '.join(given)}: for sentiment models (--task terms or category)")
    model_over, train_over = PRESETS[args.preset] if args.preset else _config(args.config)
    if not args.preset:  # each value of the file checked against its field's type
        model_over = _typed(TaggerConfig, model_over, f"{args.config}: model")
        train_over = _typed(TagTrainConfig, train_over, f"{args.config}: train")
    try:
        cfg = TaggerConfig.from_dict(model_over)
        tcfg = TagTrainConfig.from_dict(train_over)
    except ValueError as e:  # an unknown key or a bad value: named with its file
        raise CLIError(f"{args.config or '--preset ' + args.preset}: {e}") from None
    over = {k: v for k, v in (("seed", args.seed), ("epochs", args.epochs)) if v is not None}
    if args.threads is not None:
        over["threads"] = args.threads
    tcfg = replace(tcfg, **over)
    sentences = read_sentences(args.train)
    configs = [args.config] if args.config else []  # the command names it
    info: dict = {
        "seed": tcfg.seed,
        "data": {"train": file_info(args.train), "config": file_info(configs)},
        "code_version": code_version(),  # as it starts: the checkout may change meanwhile
        "environment": {**environment(), "device": "cpu"},
    }
    if args.exclude:
        sentences, dropped = drop_sentences(sentences, read_sentences(args.exclude))
        info["data"]["exclude"] = file_info(args.exclude)
        info["excluded_overlap"] = dropped
        log.info("dropped %d training sentences that occur in --exclude files", dropped)
    if args.dev:
        train, dev, empty = sentences, read_sentences(args.dev), []
        info["data"]["dev"] = file_info(args.dev)
        info["split"] = {"dev": "file"}
    else:
        parts = split(sentences, 0.1, args.heldout_empty, tcfg.seed)
        train, dev, empty = parts.train, parts.dev, parts.empty_heldout
        info["split"] = {"dev": f"seeded 10% of train (seed {tcfg.seed})",
                         "heldout_empty": len(empty)}  # fmt: skip
    unlabelled = []
    if args.unlabelled:
        if not tcfg.teacher:
            raise CLIError("--unlabelled needs a teacher (train.teacher in --config)")
        extra = read_sentences(args.unlabelled)
        known = [*train, *dev, *empty, *(read_sentences(args.exclude) if args.exclude else [])]
        extra, dropped = drop_sentences(list({s.text: s for s in extra}.values()), known)
        unlabelled = [s.text for s in extra]
        info["data"]["unlabelled"] = file_info(args.unlabelled)
        log.info("%d unlabelled sentences (%d dropped: in train, dev or --exclude)",
                 len(unlabelled), dropped)  # fmt: skip
    # after --unlabelled: a sentence left out here is still known there
    train, left_out = keep_aspect_free(train, tcfg.aspect_free, tcfg.seed)
    if left_out:
        log.info("%d aspect-free training sentences left out (aspect_free %.2f)",
                 left_out, tcfg.aspect_free)  # fmt: skip
    info["sentences"] = {"train": len(train), "dev": len(dev), "heldout_empty": len(empty),
                         "unlabelled": len(unlabelled),
                         "aspect_free_left_out": left_out}  # fmt: skip
    info["reproduce"] = command_of(args)
    info["inputs"] = _inputs(cfg, tcfg)
    dev_texts = [s.text for s in dev]
    evals = {p: read_sentences([p]) for p in args.eval or []}  # before training, not after

    def write(where: Path, run: TagRun, extra: dict) -> None:
        write_tag_run(where, run, dev_texts, {**info, **extra})
        if empty:
            write_sentences(where / HELDOUT_EMPTY, empty)

    def keep_best(run: TagRun) -> None:  # a killed run leaves its best epoch so far
        fresh, old = Path(f"{partial}.new"), Path(f"{partial}.old")
        for d in (fresh, old):
            shutil.rmtree(d, ignore_errors=True)
        write(fresh, run, {"partial": {"epochs_done": len(run.history)}})
        if partial.exists():
            partial.rename(old)
        fresh.rename(partial)
        shutil.rmtree(old, ignore_errors=True)

    try:
        run = fit_tagger(train, dev, cfg, tcfg, unlabelled, on_best=keep_best)
    except KeyboardInterrupt:  # SIGTERM, Ctrl-C: what the epochs so far left, and its use
        if (partial / "run.json").is_file():
            say(
                f"absa train: stopped: {partial} holds the best epoch so far (absa export "
                f"--run {partial} exports it)"
            )
        raise
    write(out, run, {})
    shutil.rmtree(partial, ignore_errors=True)
    reports = {
        p: {**score_extraction(Path(args.out), ss), "file": file_info([p])[0]}  # which bytes
        for p, ss in evals.items()
    }
    if reports:
        add_eval(Path(args.out), reports)
    for p, rep in reports.items():
        log.info("%s: %s", p, _line(rep))
    to_stdout(f"run written to {args.out}: best epoch {run.best_epoch}, dev {_line(run.dev)}\n")
    return 0


def _line(rep: dict) -> str:
    return (
        f"span P {rep['precision']:.2f} R {rep['recall']:.2f} F1 {rep['f1']:.2f} "
        f"({rep['true_positives']} of {rep['gold']} gold, {rep['predicted']} predicted, "
        f"{rep['sentences']} sentences)"
    )


def _inputs(cfg: TaggerConfig, tcfg: TagTrainConfig) -> dict:
    """The sha256 of what the run reads besides its data: a word-vector file given by path
    (the packaged GloVe is named by its package), and the teacher's files (train.teacher):
    their paths alone do not say which file or which teacher it was."""
    from absa.training.embeddings import PACKAGED_GLOVE
    from absa.training.provenance import file_info

    out: dict = {"vectors": None, "teacher": None}
    if cfg.encoder != "transformer" and tcfg.glove != PACKAGED_GLOVE:
        out["vectors"] = file_info([tcfg.glove])[0]
    if tcfg.teacher:
        teacher = Path(tcfg.teacher)
        files = sorted(f for f in teacher.iterdir() if f.is_file()) if teacher.is_dir() else []
        out["teacher"] = {"path": str(teacher), "files": file_info(files)}
    return out


def predict_spans(
    model: Path, texts: Sequence[str], by_sentence: bool = True
) -> list[set[tuple[int, int]]]:
    """The spans a tagger run (torch) or an extractor artifact (onnxruntime) finds; with
    ``by_sentence`` each text's sentences are tagged on their own, as the service does
    (``Extractor.extract(by_sentence=True)``), so ``absa evaluate`` scores what is served."""
    if by_sentence:
        from absa.model.sentence_split import per_sentence

        parts = per_sentence(
            texts,
            lambda pieces: predict_spans(model, pieces, by_sentence=False),
            lambda span, at: (span[0] + at, span[1] + at),
        )
        return [set(spans) for spans in parts]
    from absa.training.tagging_run import is_tag_run

    if is_tag_run(model):
        from absa.training.tagging import predict_spans as run_spans
        from absa.training.tagging_run import load_tag_run

        run = load_tag_run(model)
        return run_spans(run.net, run.text, texts)
    from absa.model.extractor import Extractor

    found = Extractor.load(model).extract(texts)
    return [{(f.start, f.end) for f in spans} for spans in found]


def evaluate_extraction(model: Path, paths: Sequence[str]) -> dict:
    """Exact-span precision / recall / F1 of ``model`` on the sentences of ``paths``."""
    from absa.training.sentences import read_sentences

    return score_extraction(model, read_sentences(paths))


def score_extraction(model: Path, sentences: Sequence) -> dict:
    from absa.model.spans import span_scores

    pred = predict_spans(model, [s.text for s in sentences])
    return span_scores([s.span_set for s in sentences], pred)


def cmd_evaluate_extract(args: argparse.Namespace, model: Path) -> int:
    from absa.model.spans import span_scores
    from absa.training.provenance import refuse_twice
    from absa.training.sentences import read_sentences

    try:
        refuse_twice(args.data)  # counted twice in the pool, once in by_file
    except ValueError as e:
        raise CLIError(str(e)) from None
    each = [read_sentences([f]) for f in args.data]  # in file order, as read_sentences reads
    sentences = [s for part in each for s in part]
    if not sentences:  # scores of nothing: P, R and F1 0.00 and exit 0
        raise CLIError(f"{', '.join(args.data)}: no sentences")
    from absa.training.evaluate import model_identity
    from absa.training.provenance import code_version, file_info

    pred = predict_spans(model, [s.text for s in sentences])  # the model loaded once
    rep: dict[str, Any] = dict(span_scores([s.span_set for s in sentences], pred))
    if len(args.data) > 1:  # each file's score beside the pooled one, as a sentiment report's
        by_file, at = {}, 0
        for f, part in zip(args.data, each, strict=True):
            got = pred[at : at + len(part)]
            by_file[f] = span_scores([s.span_set for s in part], got)
            at += len(part)
        rep["by_file"] = by_file
    # path and sha256 of each file measured, and the code: as a sentiment report
    rep.update(model=str(model), data=list(args.data), files=file_info(args.data))
    rep["model_identity"] = model_identity(model)  # which model: the path serves another later
    rep["code_version"] = code_version()
    if args.json:
        out = json.dumps(rep)
    else:
        lines = [f"{f}: {_line(r)}" for f, r in rep.get("by_file", {}).items()]
        out = "\n".join([_line(rep), *lines])
    to_stdout(out + "\n")
    return 0


def cmd_export_extract(args: argparse.Namespace) -> int:
    from absa.cli.train import command_of
    from absa.training.tagging_run import export_tag_run

    # a tagger has no sentiment probabilities to calibrate: the flags would be ignored
    given = [f for f, on in (("--no-calibrate", getattr(args, "no_calibrate", False)),
                             ("--top-map", getattr(args, "top_map", False))) if on]  # fmt: skip
    if given:
        raise CLIError(f"{' and '.join(given)}: for a sentiment model, not an extractor run")
    # before the export's work
    check_new_out(Path(args.out), "export into a new directory", Path(args.run))
    meta = export_tag_run(
        Path(args.run), Path(args.out), name=args.name, version=args.version,
        quantize=args.quantize, expand_vocab=getattr(args, "expand_vocab", None),
        expand_top_k=getattr(args, "expand_top_k", None), command=command_of(args),
    )  # fmt: skip
    par = meta["parity"]
    msg = (
        f"extractor written to {args.out}: parity on {par['n']} dev windows, max |diff| "
        f"{par['max_abs_diff']:.1e}, {par['prediction_mismatches']} decoded differently"
    )
    if q := meta.get("quantization"):
        msg += (
            f"; int8: {q['windows_decoded_differently']} of {q['dev_windows']} dev windows "
            f"decode differently, {q['bytes_int8'] / 1e6:.1f} MB"
        )
    to_stdout(msg + "\n")
    return 0
