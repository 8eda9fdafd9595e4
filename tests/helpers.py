"""Plain helpers shared by the tests: a synthetic aspect data set and tiny presets."""

from __future__ import annotations

import csv
import itertools
import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from absa.training.presets import Preset, get_preset
from absa.training.records import CategoryExample, Example

# what the TorchScript ONNX exporter says of tracing and of LSTM batch sizes: a test
# module that exports sets ``pytestmark = ONNX_EXPORT_WARNINGS``
ONNX_EXPORT_WARNINGS = [
    pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning"),
    pytest.mark.filterwarnings("ignore:Exporting a model to ONNX with a batch_size:UserWarning"),
]

ASPECTS = ("food", "service", "pizza", "staff", "wine", "music", "decor", "price", "menu", "view")
WORDS = {
    "positive": ("great", "excellent", "wonderful"),
    "negative": ("awful", "terrible", "horrible"),
    "neutral": ("ok", "average", "fine"),
}
OPPOSITE = {"positive": "negative", "negative": "positive", "neutral": "neutral"}
LABEL_CYCLE = ("positive", "negative", "neutral")


def synthetic_examples(n_sentences: int = 12, seed: int = 0, paired: bool = True) -> list[Example]:
    """ "the {a} was {w} but the {o} was {w'}": the label comes from the aspect's own word.

    ``paired``: each sentence is asked about both of its aspects (with opposite labels unless
    neutral), so only a model that uses the aspect can fit the set. Unpaired: one example per
    sentence, alternating which of the two aspects is asked about."""
    rng = random.Random(seed)
    out: list[Example] = []
    for i in range(n_sentences):
        a, o = rng.sample(ASPECTS, 2)
        label = LABEL_CYCLE[i % 3]
        w, ow = rng.choice(WORDS[label]), rng.choice(WORDS[OPPOSITE[label]])
        text = f"the {a} was {w} but the {o} was {ow}"
        sa = text.index(f"the {a} ") + 4
        so = text.index(f"the {o} ", sa) + 4
        asked = [(sa, a, label), (so, o, OPPOSITE[label])]
        if not paired:
            asked = [asked[i % 2]]
        for j, (s, term, lab) in enumerate(asked):
            out.append(Example(text, s, s + len(term), lab, f"synthetic:{i}.{j}"))
    return out


def staging_in(
    parent: Path, name: str, files: Mapping[str, bytes] | None = None
) -> tuple[subprocess.Popen[str], Path]:
    """A process in the middle of an export into ``parent / name`` (inside ``staged``,
    ``files`` written in its temporary directory: half a graph unless given) until it is
    killed; and that directory."""
    code = (
        "import json, sys, time\n"
        "from pathlib import Path\n"
        "from absa.model.artifact import staged\n"
        "with staged(Path(sys.argv[1])) as tmp:\n"
        "    for name, text in json.loads(sys.argv[2]).items():\n"
        "        (tmp / name).write_bytes(text.encode('latin-1'))\n"
        "    print(tmp, flush=True)\n"
        "    time.sleep(600)\n"
    )
    files = files or {"model.onnx": b"half a graph"}
    written = {k: v.decode("latin-1") for k, v in files.items()}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(parent / name), json.dumps(written)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def temporary_held_in(parent: Path, prefix: str) -> tuple[subprocess.Popen[str], Path]:
    """A process holding a temporary directory ``prefix*`` of ``parent`` as a running
    writer does (a flock on it, a file written in it) until it is killed; and that
    directory."""
    code = (
        "import fcntl, os, sys, tempfile, time\n"
        "from pathlib import Path\n"
        "tmp = Path(tempfile.mkdtemp(prefix=sys.argv[2], dir=sys.argv[1]))\n"
        "fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "(tmp / 'model.onnx').write_bytes(b'half a graph')\n"
        "print(tmp, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(parent), prefix], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


Writer = tuple[subprocess.Popen[str], Path]


@contextmanager
def one_writer_killed(killed: Writer, running: Writer) -> Iterator[tuple[Path, Path]]:
    """The first of two writers (``staging_in``, ``temporary_held_in``) killed by SIGKILL,
    its temporary directory left as it was; the second running until the block ends. Yields
    the dead writer's directory and the live one's."""
    try:
        killed[0].send_signal(signal.SIGKILL)
        killed[0].wait(timeout=60)
        assert (killed[1] / "model.onnx").is_file() or (killed[1] / "metadata.json").is_file()
        yield killed[1], running[1]
    finally:
        running[0].kill()
        running[0].wait(timeout=60)


def said_of(caplog: pytest.LogCaptureFixture, path: Path) -> list[str]:
    """The captured log messages that name ``path``."""
    return [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file (an output scored), as a dict."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_jsonl(path: Path, examples: Sequence[Example]) -> Path:
    rows = [
        {"text": e.text, "aspect": e.term, "start": e.start, "end": e.end, "label": e.label}
        for e in examples
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """``rows`` as a .jsonl, .csv (every row's fields the header; None an empty cell) or
    .parquet file (pyarrow) at ``path``."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".csv":
        names = list(dict.fromkeys(k for r in rows for k in r))
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=names)
            writer.writeheader()
            writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = list(dict.fromkeys(k for r in rows for k in r))  # from_pylist: the first's
        pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows]), path)
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    """An output's rows from a .jsonl, .csv (every cell a string, an empty one None) or
    .parquet file."""
    rows: list[dict[str, Any]]
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    elif path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            rows = [{k: v or None for k, v in r.items()} for r in csv.DictReader(f)]
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
    return rows


def tiny_preset(name: str, glove: Path | str, **model: object) -> Preset:
    """A named preset shrunk for tests: hidden 16, no dropout, 1 thread, no extra GloVe words."""
    base = get_preset(name)
    mcfg = replace(base.model, **{"hidden_size": 16, "attention_dim": 16, "dropout": 0.0, **model})
    tcfg = replace(
        base.train,
        epochs=40,
        batch_size=8,
        lr=0.02,
        threads=1,
        glove=str(glove),
        glove_top_k=0,
        patience=100,
        seed=3,
    )
    return Preset(mcfg, tcfg, base.about)


def tiny_pair_preset(transformer: Path, **model: object) -> Preset:
    """``accurate`` as a sentence-pair model on a small local transformer (32 wide)."""
    base = get_preset("accurate")
    mcfg = replace(
        base.model,
        **{
            "embed_dim": 32,
            "hidden_size": 16,
            "attention_dim": 16,
            "dropout": 0.0,
            "category_pair": True,
            **model,
        },
    )
    tcfg = replace(
        base.train,
        epochs=60,
        batch_size=8,
        lr=0.01,
        encoder_lr=3e-4,
        warmup=0.0,
        threads=1,
        transformer=str(transformer),
        patience=100,
        max_len=32,
        seed=3,
    )
    return Preset(mcfg, tcfg, base.about)


def data_dir() -> Path:
    """The benchmark data: $ABSA_DATA_DIR, else ../shared/data beside the repository."""
    return Path(
        os.environ.get("ABSA_DATA_DIR") or Path(__file__).parents[1].parent / "shared" / "data"
    )


ARTIFACT_ASPECTS = ("food", "service", "pizza", "staff", "wine list")  # one multi-word aspect
OPINION = {"positive": "great", "negative": "awful", "neutral": "okay"}
LABEL_CYCLE = ("positive", "negative", "neutral")


def artifact_examples() -> list[Example]:
    """ "the {a} was {w} but the {o} was {w'}" for every ordered pair of aspects (40 examples).

    Each sentence is asked about both aspects; the label comes from the aspect's own word,
    so the set is only fitted by a model that uses the aspect."""
    out: list[Example] = []
    for i, (a, o) in enumerate(itertools.permutations(ARTIFACT_ASPECTS, 2)):
        label = LABEL_CYCLE[i % 3]
        other = {"positive": "negative", "negative": "positive"}.get(
            label, ("positive", "negative")[i % 2]
        )
        text = f"the {a} was {OPINION[label]} but the {o} was {OPINION[other]}"
        sa = text.index(a)
        so = text.index(o, sa + len(a))
        out.append(Example(text, sa, sa + len(a), label, f"synthetic:{i}.0"))
        out.append(Example(text, so, so + len(o), other, f"synthetic:{i}.1"))
    return out


ARTIFACT_EXAMPLES = artifact_examples()  # what the session's artifacts were trained on


# aspect categories: each named by none of its words, so only a category embedding that
# learns which words belong to it can fit the set
CATEGORY_TERMS = {"food": ("pizza", "wine"), "service": ("staff", "waiter"), "ambience": ("music",)}


def category_examples() -> list[CategoryExample]:
    """ "the {t} was {w} but the {o} was {w'}" over terms of two different categories, asked
    about both categories (their labels differ): 16 sentences, 32 examples."""
    out: list[CategoryExample] = []
    pairs = [
        (ca, ta, cb, tb)
        for ca, cb in itertools.permutations(CATEGORY_TERMS, 2)
        for ta in CATEGORY_TERMS[ca]
        for tb in CATEGORY_TERMS[cb]
    ]
    for i, (ca, ta, cb, tb) in enumerate(pairs):
        label = LABEL_CYCLE[i % 3]
        other = {"positive": "negative", "negative": "positive"}.get(
            label, ("positive", "negative")[i % 2]
        )
        text = f"the {ta} was {OPINION[label]} but the {tb} was {OPINION[other]}"
        out.append(CategoryExample(text, ca, label, f"synthetic:{i}.0"))
        out.append(CategoryExample(text, cb, other, f"synthetic:{i}.1"))
    return out


#: aspect-free sentences for the extractor fixtures (the tagger must learn to find nothing)
EMPTY_SENTENCES = ("we went there on friday", "it was a long day", "the night was great")


def extraction_sentences() -> list:
    """ARTIFACT_EXAMPLES grouped by sentence (both aspects of each), plus EMPTY_SENTENCES."""
    from absa.training.sentences import GoldSpan, Sentence

    spans: dict[str, list] = {}
    for e in ARTIFACT_EXAMPLES:
        spans.setdefault(e.text, []).append(GoldSpan(e.start, e.end, e.label))
    out = [Sentence(t, tuple(s), "synthetic") for t, s in spans.items()]
    return out + [Sentence(t, (), "synthetic") for t in EMPTY_SENTENCES]


def exported_with_transitions(run_dir: Path, out: Path) -> Any:
    """Export a CRF tagger run to ``out`` and check that its learned transitions reach the
    artifact unchanged and serve the training sentences' spans; the loaded ``Extractor``."""
    import numpy as np

    from absa.model.extractor import Extractor
    from absa.training.tagging_run import export_tag_run, load_tag_run

    learned = load_tag_run(run_dir).net.transitions()
    assert learned is not None and np.abs(learned.pairs).max() > 0.1  # it learned something
    meta = export_tag_run(run_dir, out, version="crf")
    assert meta["parity"]["prediction_mismatches"] == 0 and "transitions.json" in meta["files"]
    ext = Extractor.load(out, device="cpu")
    assert ext.learned is not None
    np.testing.assert_allclose(ext.learned.pairs, learned.pairs)
    np.testing.assert_allclose(ext.learned.start, learned.start)
    sentences = extraction_sentences()
    found = ext.extract([s.text for s in sentences])
    assert [{(f.start, f.end) for f in spans} for spans in found] == [s.span_set for s in sentences]
    return ext


def tiny_config(path: Path, glove: Path, **train: object) -> Path:
    """A tiny atae-lstm config file (two epochs, one thread, the small GloVe file)."""
    cfg = {
        "preset": "atae-lstm",
        "model": {"hidden_size": 8, "attention_dim": 8, "dropout": 0.0},
        "train": {"glove": str(glove), "glove_top_k": 0, "threads": 1, "epochs": 2, **train},
    }
    path.write_text(json.dumps(cfg))
    return path


def write_3line(path: Path, examples: Sequence[Example]) -> Path:
    """The 3-line format: the sentence with $T$ for the aspect, the aspect, the label."""
    lines = []
    for e in examples:
        lines += [e.text[: e.start] + "$T$" + e.text[e.end :], e.term, e.label]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_vectors(tmp: Path, encoder: Path, glove: Path, *more: str) -> tuple[Path, Path, Path]:
    """Run ``absa vectors`` (6 PCA dimensions, GloVe's top 5 words, then ``more`` options)
    over the synthetic set as --texts and a one-line transfer set as --sentences; returns
    the vectors file and those two files."""
    from absa.cli import main

    train = write_jsonl(tmp / "train.jsonl", synthetic_examples(12, seed=0))
    extra = tmp / "transfer.jsonl"
    extra.write_text(json.dumps({"text": "the sushi was soggy"}) + "\n", encoding="utf-8")
    out = tmp / "vectors.txt"
    args = ["vectors", "--encoder", str(encoder), "--texts", str(train)]
    args += ["--sentences", str(extra), "--glove", str(glove), "--top-k", "5"]
    assert main([*args, "--dim", "6", *more, "--out", str(out)]) == 0
    return out, train, extra


#: Rest14 test's sentence with -LRB-/-RRB- (1.8.0 trained on MAMS train's copy with "(")
PTB_LEAK = "The food was good , but -LRB- including 2 drinks , $ 100/person -RRB- ..."


def bracket_leak(tmp_path: Path) -> tuple[list[Example], Path]:
    """The sentence of ``PTB_LEAK`` as MAMS train spells it (2 aspects: training examples),
    and a test file (3-line) holding it as Rest14 test spells it."""
    text = "The food was good, but (including 2 drinks, $100/person)."
    leak = [
        Example(text, text.index(t), text.index(t) + len(t), "neutral", f"mams:{i}")
        for i, t in enumerate(("drinks", "food"))
    ]
    at = PTB_LEAK.index("food")
    test = write_3line(tmp_path / "test.seg", [Example(PTB_LEAK, at, at + 4, "positive", "t")])
    return leak, test


#: what a scoring run says of each way a disk has no room (absa.scoring.cannot_write)
NO_ROOM = {"ENOSPC": "the disk is full", "EDQUOT": "the disk quota is used up"}


def parts_on_a_full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every ``.part`` file scoring creates (``Path.touch``) a link to /dev/full, so that
    writing the output fails as on a full disk: ENOSPC from the kernel, at whichever write
    Python or pyarrow makes, without filling a disk. Skips where there is no /dev/full."""
    full = Path("/dev/full")
    if not full.is_char_device():
        pytest.skip("no /dev/full here")
    touch = Path.touch

    def linked(self: Path, mode: int = 0o666, exist_ok: bool = True) -> None:
        if not self.name.endswith(".part"):
            return touch(self, mode, exist_ok)
        self.symlink_to(full)

    monkeypatch.setattr(Path, "touch", linked)


def until_file(
    proc: Any, path: Path, what: str, log: Path | None = None, pause: float = 0.02
) -> None:
    """Wait until ``path`` is a file while ``proc`` (a subprocess.Popen) runs, for at most 120
    s: a stage of a command (an epoch's checkpoint, a written run) reached, not a timed
    guess. Fails with ``log``'s text (or the process's stderr pipe) if it ends first."""
    import time

    deadline = time.monotonic() + 120
    while not path.is_file():
        if proc.poll() is not None:
            said = log.read_text() if log else proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"ended before {what}: {said}")
        assert time.monotonic() < deadline, f"no {what} in 120 s"
        time.sleep(pause)


def main_with_json_logs(argv: list[str], monkeypatch: Any, capsys: Any) -> tuple[int, list[dict]]:
    """``absa ARGV`` under ABSA_LOG_FORMAT=json: its exit status and every stderr line as a
    JSON object (a line that is not one fails the caller's test). ``main``'s basicConfig
    makes its handler on this test's stderr; the root logger (handlers, level) is put back
    after."""
    import json
    import logging

    from absa.cli import common, main

    monkeypatch.setenv("ABSA_LOG_FORMAT", "json")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers = []
    try:
        code = main(argv)
    finally:
        for h in root.handlers:
            root.removeHandler(h)
        root.handlers = handlers
        root.setLevel(level)
        common.JSON_LINES[0] = False
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return code, [json.loads(line) for line in lines]


def sigint_as_ctrl_c() -> None:
    """A child's ``preexec_fn``: SIGINT back to its default, so that Python in the child
    turns it into KeyboardInterrupt as Ctrl-C does. A test run started in the background of
    a shell (``pytest &``) inherits SIGINT ignored, and so did every child: the Ctrl-C tests'
    jobs trained on, unstopped."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def main_after(prelude: str, argv: list[str], cwd: Path | None = None) -> Any:
    """``absa ARGV`` through ``main`` in a fresh interpreter, after ``prelude`` (Python source
    that wraps a step to send a signal in the window a test is about); the finished process
    (``subprocess.CompletedProcess``, text output captured)."""
    code = f"import sys\n{prelude}\nfrom absa.cli import main\nsys.exit(main({argv!r}))\n"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def sigterm_around(module: str, name: str, after: bool = True) -> str:
    """A ``main_after`` prelude: ``MODULE.NAME`` (a function, looked up there when called)
    sends this process SIGTERM as it returns (``after``) or before it begins."""
    call = "step(*a, **k)"
    body = (
        f"    out = {call}\n    os.kill(os.getpid(), signal.SIGTERM)\n    return out\n"
        if after
        else f"    os.kill(os.getpid(), signal.SIGTERM)\n    return {call}\n"
    )
    return (
        "import importlib, os, signal\n"
        f"held = importlib.import_module({module!r})\n"
        f"step = held.{name}\n"
        f"def step_and_sigterm(*a, **k):\n{body}"
        f"held.{name} = step_and_sigterm\n"
    )


def sigterm_after_block(module: str) -> str:
    """A ``main_after`` prelude: ``absa.cli.MODULE``'s ``checkpoint_on_sigterm`` block sends
    this process SIGTERM as it ends, once train's handler has been put back."""
    return (
        "import contextlib, os, signal\n"
        f"from absa.cli import {module} as cli_module\n"
        "held = cli_module.checkpoint_on_sigterm\n"
        "@contextlib.contextmanager\n"
        "def held_then_sigterm():\n"
        "    with held() as asked:\n"
        "        yield asked\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "cli_module.checkpoint_on_sigterm = held_then_sigterm\n"
    )
