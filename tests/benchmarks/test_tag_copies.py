"""benchmarks/tag_copies.py: copies of training sentences only, never of a test, dev or
held-out aspect-free sentence, written as sentence JSONL that ``absa train --unlabelled``
reads, with a record of what was made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absa.training.sentences import read_sentences
from benchmarks import tag_copies

TRAIN = "The food was great but the service was awful ."
DEV = "The pizza was okay but the staff was great ."
HELD = "The wine list was great but the food was okay ."
TEST = "The service was awful but the pizza was great ."


def _xml(path: Path, texts: list[str]) -> Path:
    rows = "".join(f"<sentence id='{i}'><text>{t}</text></sentence>" for i, t in enumerate(texts))
    path.write_text(f"<sentences>{rows}</sentences>", encoding="utf-8")
    return path


def test_only_training_sentences_are_copied(
    tmp_path: Path, small_glove: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"  # the three test files the script bans, as the data dir has them
    for name in tag_copies.TESTS.values():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".xml"):
            _xml(data / name, [TEST])
        else:
            (data / name).write_text(TEST.replace("pizza", "$T$") + "\npizza\n1\n")
    monkeypatch.setenv("ABSA_DATA_DIR", str(data))
    split = tmp_path / "run"  # a tagger run's dev split and held-out aspect-free sentences
    split.mkdir()
    (split / "dev.jsonl").write_text(json.dumps({"text": DEV, "spans": []}) + "\n")
    (split / "heldout_empty.jsonl").write_text(json.dumps({"text": HELD, "spans": []}) + "\n")
    train = _xml(tmp_path / "train.xml", [TRAIN, DEV, HELD, TEST])
    out = tmp_path / "copies.jsonl"
    args = ["--split-of", str(split), "--train", str(train), "--vectors", str(small_glove),
            "--skip-top", "0", "--copies", "3", "--p", "1.0", "--out", str(out),
            "--record", str(tmp_path / "rec")]  # fmt: skip
    assert tag_copies.main(args) == 0
    made = read_sentences([str(out)])  # what absa train --unlabelled reads
    assert made and all(not s.spans for s in made)
    assert {s.source.rsplit(":", 1)[1] for s in made} == {"0"}  # TRAIN's copies alone
    assert not {s.text for s in made} & {TRAIN, DEV, HELD, TEST}
    rec = json.loads((tmp_path / "rec" / "copies-copies.json").read_text())
    assert rec["copies"] == len(made) and rec["sentences_read"] == 4 and rec["banned_texts"] == 3
    with pytest.raises(SystemExit):  # a --split-of without a dev split is refused
        tag_copies.main([*args[:1], str(tmp_path), *args[2:]])
