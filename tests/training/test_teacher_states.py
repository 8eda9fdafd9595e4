"""A teacher's contextual word states as targets (`absa states`) and the hint term that
trains a word-vector student's recurrent states on them (``distill_states``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from absa.cli import main
from absa.model.text import Token, tokenize
from absa.training import rundir
from absa.training import static_vectors as sv
from absa.training import teacher_states as ts
from absa.training.exporting import export_run
from absa.training.state_distill import StateHint
from absa.training.train import fit
from tests.helpers import synthetic_examples, tiny_preset, write_jsonl

SOURCES = ["a/lap.raw", "b/rest.raw", "a/lap.raw", "b/rest.raw"]
TEXTS = [
    "the food was soggy but the service was great",
    "great food",
    "the food was soggy but the service was great",  # read once
    "service , service and more service",
]


@pytest.fixture(scope="module")
def states_dir(tmp_path_factory: pytest.TempPathFactory, tiny_transformer: Path) -> Path:
    out = tmp_path_factory.mktemp("states") / "d4"
    ts.build(tiny_transformer, TEXTS, out, dim=4, extra={"note": "test"})
    return out


def test_fit_pca_gives_a_mean_variance_of_one_and_the_share_kept() -> None:
    rng = np.random.default_rng(0)
    rows = (rng.normal(size=(500, 3)) * [6.0, 3.0, 1.0]) @ rng.normal(size=(3, 10))
    mean, comps, scale, kept = ts.fit_pca(rows, 2)
    projected = ((rows - mean) @ comps.T) * scale
    assert comps.shape == (2, 10)
    assert projected.var(0, ddof=1).mean() == pytest.approx(1.0, rel=1e-6)
    assert 0.9 < kept < 1.0  # the third direction is left out
    with pytest.raises(ValueError, match="dim"):
        ts.fit_pca(rows, 11)


def test_the_directory_holds_each_words_reduced_state_in_its_sentence(
    states_dir: Path, tiny_transformer: Path
) -> None:
    states = ts.TeacherStates(states_dir)
    assert states.dim == 4
    assert states.record["sentences"] == 3 and states.record["note"] == "test"
    assert states.record["words"] == 9 + 2 + 6 and states.record["words_unread"] == 0
    pca = np.load(states_dir / ts.PCA)
    model, tok = sv.load_encoder(tiny_transformer)
    for i, words, full in sv.sentence_states(model, tok, TEXTS[:2]):
        want = ((full - pca["mean"]) @ pca["components"].T) * pca["scale"]
        got = states.rows(TEXTS[i], tokenize(TEXTS[i]))
        assert got is not None and got.shape == (len(words), 4)
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)  # kept as float16
    # the same word reads differently in another sentence: the states are in context
    first = states.rows(TEXTS[0], tokenize(TEXTS[0]))
    second = states.rows(TEXTS[1], tokenize(TEXTS[1]))
    assert first is not None and second is not None
    assert not np.allclose(first[1], second[1], atol=1e-3)  # "food" in both


def test_a_window_of_words_gets_its_own_rows_and_unknown_text_none(states_dir: Path) -> None:
    states = ts.TeacherStates(states_dir)
    words = tokenize(TEXTS[0])
    whole = states.rows(TEXTS[0], words)
    assert whole is not None
    np.testing.assert_array_equal(states.rows(TEXTS[0], words[3:6]), whole[3:6])
    assert states.rows("a sentence it never read", tokenize("a sentence it never read")) is None
    assert states.rows(TEXTS[1], []) is None


def test_a_window_of_other_words_gets_none(states_dir: Path) -> None:
    """A student whose tokenizer cut the text otherwise (here "the food" as one word) reads
    no rows, rather than rows of other words."""
    states = ts.TeacherStates(states_dir)
    assert states.tokenizer == 2  # the version new states are made with, recorded
    words = tokenize(TEXTS[0])
    assert states.rows(TEXTS[0], words[:3]) is not None
    merged = [Token("the food", words[0].start, words[1].end), *words[2:4]]
    assert states.rows(TEXTS[0], merged) is None


def test_a_record_without_a_version_is_read_with_the_first(
    states_dir: Path, tmp_path: Path
) -> None:
    """States made before versions were recorded (tokenizer 1) read their texts' words as
    that tokenizer cut them: "'pasta" one word, where version 2 reads two."""
    import shutil

    old = tmp_path / "old"
    shutil.copytree(states_dir, old)
    record = json.loads((old / ts.RECORD).read_text())
    assert record.pop("word_tokenizer") == 2
    (old / ts.RECORD).write_text(json.dumps(record))
    assert ts.TeacherStates(old).tokenizer == 1


def test_a_missing_directory_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="absa states"):
        ts.TeacherStates(tmp_path)


MORE_TEXTS = [f"the screen {k} was {'bright' if k % 2 else 'dim and slow'}" for k in range(7)]


def test_a_stopped_build_resumes_from_its_parts_with_the_same_numbers(
    tmp_path: Path,
    tiny_transformer: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Killed after two parts, the same call again reads them back, encodes the rest in the
    same batches and writes what a build never stopped writes, byte for byte."""
    import logging

    monkeypatch.setattr(ts, "BATCH", 1)
    monkeypatch.setattr(ts, "PART", 2)
    whole = tmp_path / "whole"
    ts.build(tiny_transformer, MORE_TEXTS, whole, dim=3)
    assert not (tmp_path / "whole.parts").exists()  # removed once the directory is whole

    real_write, written = ts._write_part, []

    def write_then_die(parts: Path, lo: int, states: dict) -> None:
        real_write(parts, lo, states)
        written.append(lo)
        if len(written) == 2:
            raise KeyboardInterrupt  # the session ends here

    monkeypatch.setattr(ts, "_write_part", write_then_die)
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        ts.build(tiny_transformer, MORE_TEXTS, out, dim=3)
    assert not out.exists()
    assert len(list((tmp_path / "resumed.parts").glob("part-*.npz"))) == 2
    monkeypatch.setattr(ts, "_write_part", real_write)
    caplog.set_level(logging.INFO)
    ts.build(tiny_transformer, MORE_TEXTS, out, dim=3)
    assert any("4 sentences' states kept" in r.getMessage() for r in caplog.records)
    for name in (ts.STATES, ts.INDEX, ts.PCA):
        assert (out / name).read_bytes() == (whole / name).read_bytes()


def test_parts_kept_for_other_texts_are_not_read(
    tmp_path: Path, tiny_transformer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ts, "BATCH", 1)
    monkeypatch.setattr(ts, "PART", 2)
    parts = tmp_path / "d.parts"
    key = {"encoder_files": {}, "texts_sha256": "another", "batch": 1}
    ts._read_parts(parts, key)
    ts._write_part(parts, 0, {0: np.zeros((1, 8), np.float16)})  # another encoder's rows
    ts.build(tiny_transformer, MORE_TEXTS, tmp_path / "d", dim=3)
    fresh = tmp_path / "fresh"
    ts.build(tiny_transformer, MORE_TEXTS, fresh, dim=3)
    assert (tmp_path / "d" / ts.STATES).read_bytes() == (fresh / ts.STATES).read_bytes()


def test_sentence_states_skips_whole_batches_only(tiny_transformer: Path) -> None:
    model, tok = sv.load_encoder(tiny_transformer)
    every = list(sv.sentence_states(model, tok, MORE_TEXTS, batch_size=2))
    rest = list(sv.sentence_states(model, tok, MORE_TEXTS, batch_size=2, skip=4))
    assert [i for i, *_ in rest] == [i for i, *_ in every][4:]
    for (_, _, a), (_, _, b) in zip(rest, every[4:], strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="multiple"):
        next(sv.sentence_states(model, tok, MORE_TEXTS, batch_size=2, skip=3))


def test_cli_states_leaves_out_excluded_sentences_and_records_the_data(
    tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = synthetic_examples(4, seed=1)
    test = synthetic_examples(1, seed=1)  # its sentence is the first training sentence
    files = write_jsonl(tmp_path / "train.jsonl", train), write_jsonl(tmp_path / "test.jsonl", test)
    out = tmp_path / "states"
    args = ["states", "--encoder", str(tiny_transformer), "--texts", str(files[0])]
    rc = main([*args, "--exclude", str(files[1]), "--dim", "3", "--out", str(out)])
    assert rc == 0
    record = json.loads((out / ts.RECORD).read_text())
    assert record["sentences"] == 3 and record["excluded_texts"] == 2
    assert record["dim"] == 3 and record["data"][0]["sha256"]
    index = json.loads((out / ts.INDEX).read_text())
    assert test[0].text not in index and train[-1].text in index
    assert sorted(p.name for p in tmp_path.iterdir()) == ["states", "test.jsonl", "train.jsonl"]
    said = capsys.readouterr().out.splitlines()  # one line: what was written where
    assert said == [
        f"states written to {out}: 3 sentences, {record['words']} words x 3 dimensions "
        f"({100 * record['variance_kept']:.1f}% of the variance)"
    ]


@pytest.mark.parametrize("kind", ["directory", "file"])
def test_cli_states_refuses_an_existing_out_before_any_work(
    kind: str, tmp_path: Path, tiny_transformer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing --out was removed whole (a directory: `--out runs` wiped runs/) or, a
    file, failed at the end and left .tmp and .parts behind: now one line before the encoder
    is loaded, and all is left as it was."""
    train = write_jsonl(tmp_path / "train.jsonl", synthetic_examples(4, seed=1))
    out = tmp_path / "runs"
    if kind == "directory":
        out.mkdir()
        (out / "keep.txt").write_text("the user's\n")
    else:
        out.write_text("the user's\n")
    for encoder in (tiny_transformer, tmp_path / "no-such-encoder"):  # not loaded: not read
        args = ["states", "--encoder", str(encoder), "--texts", str(train), "--dim", "4"]
        assert main([*args, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert (
            err == f"absa states: error: {out} exists; write the states directory to a new path\n"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "train.jsonl"]
    kept = out / "keep.txt" if kind == "directory" else out
    assert kept.read_text() == "the user's\n"
    if kind == "directory":
        assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_a_failed_build_leaves_no_temporary_directory_and_keeps_parts_to_resume(
    tmp_path: Path, tiny_transformer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "d"
    with pytest.raises(TypeError, match="not JSON serializable"):  # the record, written last
        ts.build(tiny_transformer, MORE_TEXTS, out, dim=3, extra={"x": object()})
    assert list(tmp_path.iterdir()) == []  # no states.npy half-way in a .tmp, no bare .parts
    monkeypatch.setattr(ts, "BATCH", 1)
    monkeypatch.setattr(ts, "PART", 2)
    with pytest.raises(ValueError, match="dim"):  # after the encoding, which is kept
        ts.build(tiny_transformer, MORE_TEXTS, out, dim=1000)
    assert [p.name for p in tmp_path.iterdir()] == ["d.parts"]
    assert len(list((tmp_path / "d.parts").glob("part-*.npz"))) == 3
    ts.build(tiny_transformer, MORE_TEXTS, out, dim=3)
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_parts_path_with_files_not_of_states_is_refused_or_left(
    tmp_path: Path, tiny_transformer: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``<out>.parts`` is removed once the directory is whole: a folder of that name that an
    earlier call did not make is refused; a user's file in one it did make is kept."""
    import logging

    parts = tmp_path / "d.parts"
    parts.mkdir()
    (parts / "notes.txt").write_text("the user's\n")
    with pytest.raises(FileExistsError, match=r"d\.parts exists and is not the parts"):
        ts.build(tiny_transformer, MORE_TEXTS, tmp_path / "d", dim=3)
    assert [p.name for p in parts.iterdir()] == ["notes.txt"]
    ts._read_parts(parts, {"encoder_files": {}, "texts_sha256": "another", "batch": 1})
    caplog.set_level(logging.WARNING)
    ts.build(tiny_transformer, MORE_TEXTS, tmp_path / "d", dim=3)
    assert (tmp_path / "d" / ts.STATES).is_file()
    assert [p.name for p in parts.iterdir()] == ["notes.txt"]
    assert any("did not write" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------- the hint term


def _student(
    glove: Path, states: Path, weight: float, epochs: int = 30, preset: str = "atae-lstm"
) -> object:
    base = tiny_preset(preset, glove)
    return replace(
        base,
        train=replace(base.train, epochs=epochs, distill_states=weight, teacher_states=str(states)),
    )


@pytest.fixture(scope="module")
def synthetic_states(tmp_path_factory: pytest.TempPathFactory, tiny_transformer: Path) -> Path:
    out = tmp_path_factory.mktemp("states") / "synthetic"
    ts.build(tiny_transformer, [e.text for e in synthetic_examples(12, seed=0)], out, dim=4)
    return out


def _hint(
    glove: Path,
    states: Path,
    tmp_path: Path,
    sources: list[str] | None = None,
    preset: object | None = None,
    **kw: object,
) -> tuple[StateHint, nn.Module, Callable[[list[int]], None]]:
    """A hint over four synthetic items (``sources``: their files, one each), its network (of
    ``preset``: a hinted ``atae-lstm`` by default) and a function that runs the network
    forward on the items of the given indices."""
    from absa.training.inference import to_tensors
    from absa.training.train import build_network

    examples = synthetic_examples(12, seed=0)[:4]
    if sources:
        named = enumerate(zip(examples, sources, strict=True))
        examples = [replace(e, source=f"{d}:{i}") for i, (e, d) in named]
    _, pipe, net = build_network(
        preset or _student(glove, states, 1.0), examples, torch.device("cpu")
    )
    encoded = [pipe.encode(e.text, e.start, e.end) for e in examples]
    net.eval()
    return (
        StateHint(net, states, examples, encoded, **kw),
        net,
        lambda items: net(**to_tensors([encoded[i] for i in items], pipe.pad_id)),
    )


def _mse(hint: StateHint, rows: list[int], proj: Callable[[int], nn.Module]) -> float:
    """The hint's loss, item by item: each row's states through ``proj(row)``."""
    h = hint._h
    assert h is not None
    errs = []
    for row in rows:
        target = torch.from_numpy(hint.targets[row])
        read = ~torch.isnan(target[:, 0])
        errs.append(proj(row)(h[row, : len(target)][read]) - target[read])
    return torch.cat(errs).pow(2).mean().item()


def test_the_hint_loss_is_the_mse_over_the_words_the_teacher_read(
    small_glove: Path, synthetic_states: Path, tmp_path: Path
) -> None:
    hint, net, forward = _hint(small_glove, synthetic_states, tmp_path)
    assert all(t is not None for t in hint.targets)
    hint.targets[1] = None  # an item without targets adds nothing
    hint.targets[2] = hint.targets[2].copy()
    hint.targets[2][0] = np.nan  # nor does a word the teacher did not read
    forward([0, 1, 2, 3])
    loss = hint.loss([0, 1, 2, 3])
    want = _mse(hint, [0, 2, 3], lambda _: hint.proj)
    assert loss.item() == pytest.approx(want, rel=1e-5)
    hint.close()
    assert not net.rnn._forward_hooks  # the network is as it was built


def test_the_hint_reads_the_top_states_with_self_attention_between_the_layers(
    small_glove: Path, synthetic_states: Path, tmp_path: Path
) -> None:
    """Two layers, the self-attention between them: the hint sees the second layer's states
    (the network's H), not the mixed states of the first."""
    base = _student(small_glove, synthetic_states, 1.0, preset="card")
    two = replace(base, model=replace(base.model, layers=2, self_attention_at="between"))
    hint, net, forward = _hint(small_glove, synthetic_states, tmp_path, preset=two)
    seen: list[torch.Tensor] = []
    net.rnn.upper[0].register_forward_hook(lambda _m, _a, out: seen.append(out[0]))
    forward([0, 1, 2, 3])
    assert hint._h is not None and torch.equal(hint._h, seen[0])
    loss = hint.loss([0, 1, 2, 3])
    assert loss.item() == pytest.approx(_mse(hint, [0, 1, 2, 3], lambda _: hint.proj), rel=1e-5)


@pytest.mark.parametrize("name", ["atae-lstm", "card-gru"])  # LSTM and GRU states
def test_a_student_trained_with_the_hint_fits_the_states_and_saves_no_map(
    name: str, small_glove: Path, synthetic_states: Path, tmp_path: Path
) -> None:
    examples = synthetic_examples(12, seed=0)
    hinted = _student(small_glove, synthetic_states, 1.0, preset=name)
    run = fit(examples, examples, hinted, tmp_path / "h")
    assert run.dev["accuracy"] >= 0.9  # the task is still learnt
    info = rundir.read_info(tmp_path / "h")
    assert info["teacher_states"]["items_with_targets"] == info["teacher_states"]["items"]
    assert info["teacher_states"]["path"] == str(synthetic_states)
    # the artifact records how the states were made (the card says what the hint was)
    meta = export_run(tmp_path / "h", tmp_path / "art", calibrate=False)
    assert meta["train"]["teacher_states"] == info["teacher_states"]
    unhinted = _student(small_glove, synthetic_states, 0.0, preset=name)
    plain = fit(examples, examples, unhinted, tmp_path / "p")
    assert plain.dev["accuracy"] >= 0.9
    with_hint = rundir.load_run(tmp_path / "h").net.state_dict()
    without = rundir.load_run(tmp_path / "p").net.state_dict()
    assert with_hint.keys() == without.keys()  # the map is not saved with the network
    assert rundir.read_info(tmp_path / "p")["teacher_states"] is None
    assert not torch.equal(with_hint["rnn.fwd.weight_ih_l0"], without["rnn.fwd.weight_ih_l0"])


def test_distill_states_needs_a_directory_and_a_word_vector_model(
    small_glove: Path, synthetic_states: Path, tmp_path: Path
) -> None:
    base = tiny_preset("atae-lstm", small_glove)
    with pytest.raises(ValueError, match="teacher_states"):
        replace(base.train, distill_states=1.0)
    with pytest.raises(ValueError, match=">= 0"):
        replace(base.train, distill_states=-1.0, teacher_states=str(synthetic_states))
    examples = synthetic_examples(4, seed=0)
    with pytest.raises(FileNotFoundError, match="absa states"):
        fit(examples, examples, _student(small_glove, tmp_path, 1.0, epochs=1), tmp_path / "r")


def test_items_of_skipped_files_get_no_hint(
    small_glove: Path, synthetic_states: Path, tmp_path: Path
) -> None:
    from absa.training.state_distill import skipped

    assert skipped("data/Laptops_Train.xml.seg:12", ["Laptops_Train.xml.seg"])
    assert skipped("transfer:subst2:data/Laptops_Train.xml.seg:7", ["Laptops_Train.xml.seg"])
    assert skipped(
        "transfer:data/acos-laptop/train.jsonl:3",
        ["Laptops_Train.xml.seg", "acos-laptop/train.jsonl"],
    )
    assert not skipped("data/mams/train.xml:4", ["Laptops_Train.xml.seg"])
    assert not skipped("data/Laptops_Train.xml.seg:12", [])
    hint, _, _ = _hint(small_glove, synthetic_states, tmp_path, SOURCES, skip=["lap.raw"])
    assert [t is None for t in hint.targets] == [True, False, True, False]
    assert hint.record["items_skipped"] == 2 and hint.record["skip"] == ["lap.raw"]
    hint.close()
    with pytest.raises(ValueError, match="list of file-name endings"):
        replace(tiny_preset("atae-lstm", small_glove).train, distill_states_skip="lap.raw")
    train = tiny_preset("atae-lstm", small_glove).train
    assert replace(train, distill_states_skip=["x"]).distill_states_skip == ("x",)


def test_items_of_apart_files_regress_through_their_own_map(
    small_glove: Path, synthetic_states: Path, tmp_path: Path
) -> None:
    hint, _, forward = _hint(small_glove, synthetic_states, tmp_path, SOURCES, apart=["lap.raw"])
    assert hint.own_map == [True, False, True, False] and hint.apart is not None
    assert hint.record["items_apart"] == 2 and hint.record["apart"] == ["lap.raw"]
    assert all(t is not None for t in hint.targets)  # apart is not skipped
    forward([0, 1, 2, 3])
    loss = hint.loss([0, 1, 2, 3])
    maps = {0: hint.apart, 1: hint.proj, 2: hint.apart, 3: hint.proj}
    assert loss.item() == pytest.approx(_mse(hint, [0, 1, 2, 3], maps.__getitem__), rel=1e-5)
    # each map learns from its own items only
    forward([1])
    hint.loss([1]).backward()
    assert hint.proj.weight.grad is not None and hint.proj.weight.grad.any()
    assert hint.apart.weight.grad is None or not hint.apart.weight.grad.any()
    hint.close()
    with pytest.raises(ValueError, match="distill_states_apart is a list"):
        replace(tiny_preset("atae-lstm", small_glove).train, distill_states_apart="lap.raw")
