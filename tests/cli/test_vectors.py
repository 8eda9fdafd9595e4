"""``absa vectors`` in-process: a transformer distilled into a GloVe-format file that a GloVe
model then trains on, with the file's record and the run's note of it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from absa.cli import CLIError, main
from absa.model.artifact import sha256_file
from absa.training.embeddings import load_glove
from absa.training.rundir import read_info
from tests.helpers import make_vectors, synthetic_examples, tiny_config, write_jsonl

EXAMPLES = synthetic_examples(12, seed=0)


def test_vectors_then_train_on_them(
    tmp_path: Path, tiny_transformer: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, train, extra = make_vectors(tmp_path, tiny_transformer, small_glove)
    said = capsys.readouterr().out.splitlines()  # one line: what was written where
    assert said == [f"vectors written to {out}: {len(load_glove(str(out))[0])} words x 56 "
                    f"dimensions (record: {out}.json)"]  # fmt: skip
    words, matrix = load_glove(str(out))
    glove_words, glove = load_glove(str(small_glove))
    assert words[:5] == glove_words[:5]  # GloVe's head first, then the texts' other words
    assert {"soggy", "sushi", "pizza", "awful"} <= set(words)
    assert matrix.shape == (len(words), 50 + 6)
    row = words.index("awful")
    assert matrix[row, :50].tolist() == pytest.approx(glove[glove_words.index("awful")], abs=1e-4)
    assert not matrix[words.index("soggy"), :50].any()  # GloVe lacks it: zeros, not noise
    record = json.loads((tmp_path / "vectors.txt.json").read_text())
    assert record["dim"] == 56 and record["pca_dim"] == 6 and record["words"] == len(words)
    assert record["encoder_files"] == {
        "model.safetensors": sha256_file(tiny_transformer / "model.safetensors")
    }
    assert [d["path"] for d in record["data"]] == [str(train), str(extra)]

    run = tmp_path / "run"
    config = tiny_config(tmp_path / "c.json", out, epochs=1)
    assert main(["train", "--train", str(train), "--config", str(config), "--out", str(run)]) == 0
    info = read_info(run)
    assert info["vectors"] == {"path": str(out), "sha256": sha256_file(out)}
    assert json.loads((run / "model_config.json").read_text())["embed_dim"] == 56


def test_context_vectors_pool_the_words_sentences(
    tmp_path: Path, tiny_transformer: Path, small_glove: Path
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "ctx").mkdir()
    plain, _, _ = make_vectors(tmp_path / "plain", tiny_transformer, small_glove)
    pooled, _, _ = make_vectors(tmp_path / "ctx", tiny_transformer, small_glove, "--context")
    words, a = load_glove(str(plain))
    assert load_glove(str(pooled))[0] == words  # the same words, other vectors
    b = load_glove(str(pooled))[1]
    assert a[:, :50].tolist() == b[:, :50].tolist() and not np.allclose(a[:, 50:], b[:, 50:])
    record = json.loads((tmp_path / "ctx" / "vectors.txt.json").read_text())
    assert record["context"] is True and record["occurrences"] > len(EXAMPLES)
    assert json.loads((tmp_path / "plain" / "vectors.txt.json").read_text())["context"] is False


def test_vectors_leave_out_the_sentences_of_exclude_files(
    tmp_path: Path, tiny_transformer: Path, small_glove: Path
) -> None:
    test = write_jsonl(tmp_path / "test.jsonl", EXAMPLES[:2])  # one sentence, asked twice
    out, train, _ = make_vectors(
        tmp_path, tiny_transformer, small_glove, "--context", "--exclude", str(test)
    )
    record = json.loads((tmp_path / "vectors.txt.json").read_text())
    assert record["exclude"] == [{"path": str(test), "sha256": sha256_file(test)}]
    asked = sum(e.text == EXAMPLES[0].text for e in EXAMPLES)
    assert record["excluded_texts"] == asked > 0
    assert record["texts"] == len(EXAMPLES) + 1 - asked  # + the transfer sentence


def test_vectors_names_the_bad_line_of_a_sentences_file(
    tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"aspect": "x"}\n', encoding="utf-8")
    args = ["vectors", "--encoder", str(tiny_transformer), "--texts", str(train)]
    code = main([*args, "--sentences", str(bad), "--dim", "4", "--out", str(tmp_path / "v.txt")])
    assert code == 2
    assert f"{bad}:2" in capsys.readouterr().err
    assert not (tmp_path / "v.txt").exists()


def test_vectors_refuses_a_glove_run(
    tmp_path: Path, tiny_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    args = ["vectors", "--encoder", str(tiny_run), "--texts", str(train)]
    assert main([*args, "--out", str(tmp_path / "v.txt")]) == 2
    assert "has no encoder to distil" in capsys.readouterr().err
    assert not (tmp_path / "v.txt").exists()


def test_a_sentences_file_that_is_not_utf8_or_not_json_names_the_line(tmp_path: Path) -> None:
    from absa.cli.common import CLIError
    from absa.cli.vectors import _jsonl_texts

    good = tmp_path / "good.jsonl"
    good.write_bytes(b'{"text": "the food"}\n\n{"text": "caf\xc3\xa9"}\n')
    assert _jsonl_texts(good) == ["the food", "café"]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(CLIError, match=r"bad\.jsonl:2: not UTF-8"):
        _jsonl_texts(bad)
    bad.write_bytes(b'{"text": "fine"}\n{"txt": "x"}\n')
    with pytest.raises(CLIError, match=r"bad\.jsonl:2: not a JSON object with a text"):
        _jsonl_texts(bad)


@pytest.mark.parametrize("kind", ["directory", "file"])
def test_vectors_refuse_an_existing_out_before_any_work(
    kind: str, tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing --out (a directory failed at the rename, after all the encoding, and
    left vectors.txt.tmp behind; a file was replaced) is one line, before the encoder is
    loaded, and left as it was."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    out = tmp_path / "vectors.txt"
    if kind == "directory":
        out.mkdir()
        (out / "keep.txt").write_text("the user's\n")
    else:
        out.write_text("the user's\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    for encoder in (tiny_transformer, tmp_path / "no-such-encoder"):  # not loaded: not read
        args = ["vectors", "--encoder", str(encoder), "--texts", str(train), "--top-k", "5"]
        assert main([*args, "--dim", "4", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"absa vectors: error: {out} exists; write the vectors file to a new path\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no .tmp, no record
    kept = out / "keep.txt" if kind == "directory" else out
    assert kept.read_text() == "the user's\n"


@pytest.mark.parametrize("command", ["vectors", "states"])
def test_a_wrong_encoder_is_said_before_the_texts_are_read(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped --encoder was named only after every --texts file had been read (here
    the missing texts file would have been the error); a folder without a model is refused
    the same way."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for encoder in (tmp_path / "no-such-encoder", empty):
        args = [command, "--encoder", str(encoder), "--texts", str(tmp_path / "gone.jsonl")]
        assert main([*args, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"absa {command}: error: {encoder}: neither a training run nor a model directory\n"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


@pytest.mark.parametrize(
    ("command", "flags", "words"),
    [
        ("vectors", ["--dim", "0"], "--dim is at least 1, not 0"),
        ("states", ["--dim", "-3"], "--dim is at least 1, not -3"),
        ("vectors", ["--top-k", "-1"], "--top-k is a number of words, >= 0, not -1"),
        ("vectors", ["--glove", "mine.txt", "--no-glove"], "--glove and --no-glove"),
    ],
)
def test_numbers_and_flags_that_cannot_work_are_refused_before_any_work(
    command: str,
    flags: list[str],
    words: str,
    tmp_path: Path,
    tiny_transformer: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--dim 0 failed in the PCA after all the encoding (an hour); --top-k -1 took all of
    GloVe but its last word (words[:-1]: 399,999 words to encode); --glove beside
    --no-glove was dropped without a word, the word list read from the packaged GloVe.
    Each is one line before the texts are read (here a missing file) or the encoder
    loaded."""
    args = [command, "--encoder", str(tiny_transformer), "--texts", str(tmp_path / "gone.jsonl")]
    assert main([*args, *flags, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["vectors", "states"])
def test_no_sentence_left_after_exclude_is_one_line_before_the_encoder(
    command: str, tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every sentence of --texts in --exclude (the test set given as both): states failed
    with numpy's "need at least one array to concatenate" after loading the encoder, and
    vectors (--top-k 0) with "dim must be in 1..0"."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    args = [command, "--encoder", str(tiny_transformer), "--texts", str(train)]
    extra = ["--top-k", "0"] if command == "vectors" else []
    code = main([*args, *extra, "--exclude", str(train), "--dim", "4",
                 "--out", str(tmp_path / "out")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err == (
        f"absa {command}: error: no sentences to encode in --texts and --sentences (all are "
        "in --exclude)\n"
    ), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]


def test_vectors_refuse_a_record_path_that_holds_another_file(
    tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out acos` beside the input acos.json: the record (OUT.json) was written over the
    user's data file. A record of an earlier, killed `absa vectors` is still written over."""
    train = write_jsonl(tmp_path / "acos.json", EXAMPLES)
    before = train.read_bytes()
    args = ["vectors", "--encoder", str(tiny_transformer), "--texts", str(train), "--top-k", "5"]
    assert main([*args, "--dim", "4", "--out", str(tmp_path / "acos")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"absa vectors: error: {train} exists and is not the record of a vectors file (OUT.json "
        "is written beside OUT); write the vectors elsewhere\n"
    ), err
    assert train.read_bytes() == before and not (tmp_path / "acos").exists()
    out = tmp_path / "v.txt"
    (tmp_path / "v.txt.json").write_text(json.dumps({"encoder_files": {}, "pca_dim": 9}))
    assert main([*args, "--dim", "4", "--out", str(out)]) == 0  # a stale record: replaced
    assert json.loads((tmp_path / "v.txt.json").read_text())["pca_dim"] == 4


@pytest.mark.parametrize("command", ["vectors", "states"])
def test_what_cannot_work_is_said_before_the_encoding(
    command: str, tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --dim over the encoder's width failed after all the encoding ("dim must be in
    1..32", naming no flag); an --out that cannot be written (/proc) failed after it too,
    naming a temporary file; --sentences of blank texts failed in numpy; an empty --out
    was taken for "."."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    base = [command, "--encoder", str(tiny_transformer), "--texts", str(train)]
    out = ["--out", str(tmp_path / "out")]
    assert main([*base, "--dim", "33", *out]) == 2
    assert capsys.readouterr().err == (
        f"absa {command}: error: --dim 33 is more than the encoder's 32 dimensions\n"
    )
    assert main([*base, "--dim", "4", "--out", "/proc/absa-out"]) == 2
    assert capsys.readouterr().err.startswith(f"absa {command}: error: cannot write /proc: ")
    blank = tmp_path / "blank.jsonl"
    blank.write_text('{"text": "   "}\n{"text": ""}\n')
    excluded = [*base, "--exclude", str(train), "--sentences", str(blank), "--dim", "2", *out]
    assert main(excluded) == 2
    assert "no sentences to encode in --texts and --sentences" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--dim", "4", "--out", ""])
    assert "--out: empty" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blank.jsonl", "train.jsonl"]


def test_a_sentences_file_with_a_bom_is_read_and_a_text_not_a_string_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A UTF-8 BOM (accepted in --texts and config files) was "not a JSON object"; a
    {"text": null} was read as the text "None"."""
    from absa.cli.vectors import _jsonl_texts

    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b'\xef\xbb\xbf{"text": "good food"}\n{"text": "bad wine"}\n')
    assert _jsonl_texts(bom) == ["good food", "bad wine"]
    null = tmp_path / "null.jsonl"
    null.write_text('{"text": "fine"}\n{"text": null}\n')
    with pytest.raises(CLIError, match=r"null.jsonl:2: text is null, not a string"):
        _jsonl_texts(null)


@pytest.mark.parametrize("command", ["vectors", "states"])
@pytest.mark.parametrize("broken", ["tokenizer.json", "model.safetensors"])
def test_a_damaged_encoder_is_one_line_naming_its_file(
    command: str,
    broken: str,
    tmp_path: Path,
    tiny_transformer: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tokenizer.json that is not JSON, or weights cut short (a copy that stopped), was a
    traceback and exit 1 ("Exception: expected value at line 1 column 1", SafetensorError)."""
    import shutil

    encoder = shutil.copytree(tiny_transformer, tmp_path / "enc")
    target = encoder / broken
    target.write_bytes(b"garbage\n" if broken == "tokenizer.json" else target.read_bytes()[:900])
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    argv = [command, "--encoder", str(encoder), "--texts", str(train), "--dim", "4"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"absa {command}: error: {target}: cannot be read"), err


def test_a_model_directory_without_a_fast_tokenizer_is_named_as_such(
    tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Hugging Face directory with vocab.txt and no tokenizer.json was "neither a training
    run nor a model directory"."""
    import shutil

    encoder = shutil.copytree(tiny_transformer, tmp_path / "enc")
    (encoder / "tokenizer.json").unlink()
    (encoder / "vocab.txt").write_text("[PAD]\n[UNK]\nfood\n")
    argv = ["vectors", "--encoder", str(encoder), "--texts", str(tmp_path / "gone.jsonl")]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"absa vectors: error: {encoder}: a model directory without "), err
