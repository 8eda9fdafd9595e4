"""benchmarks/oof_folds.py: a teacher's training examples in two folds of whole sentences."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from absa.training.overlap import bracket_free
from absa.training.readers import read_examples
from absa.training.records import Example
from absa.training.rundir import RUN_KIND, write_examples
from benchmarks.oof_folds import main, split_folds, teacher_train
from tests.helpers import synthetic_examples


def test_folds_keep_sentences_whole_and_balanced() -> None:
    examples = synthetic_examples(40, seed=1)
    shared = Example("The Decor was great", 4, 9, "positive", "b:1")  # another file's copy
    examples += [Example("the decor was great", 4, 9, "positive", "a:1"), shared]
    a, b = split_folds(examples, seed=1)
    assert sorted(map(id, a + b)) == sorted(map(id, examples))  # a partition
    texts_a = {e.text.lower() for e in a}
    assert not texts_a & {e.text.lower() for e in b}  # no sentence in both
    assert abs(len(a) - len(b)) <= max(Counter(e.text for e in examples).values())
    assert [e for e in examples if e in a] == a  # the given order kept
    assert split_folds(examples, seed=1) == (a, b)  # fixed by the seed
    assert split_folds(examples, seed=2) != (a, b)


def test_a_sentence_in_both_bracket_spellings_goes_to_one_fold() -> None:
    """MAMS train writes "(", Rest14 train "-LRB-": by normalise_text the two copies were
    two sentences, and could go to both folds (each fold's teacher scoring out of fold a
    sentence it trained on)."""
    examples = synthetic_examples(40, seed=1)
    for i in range(12):  # 12 sentences, each in both spellings
        examples.append(Example(f"the food ( {i} ) was good", 4, 8, "positive", f"mams:{i}"))
        examples.append(Example(f"the food -LRB- {i} -RRB- was good", 4, 8, "negative", f"r:{i}"))
    for seed in range(1, 6):
        a, b = split_folds(examples, seed=seed)
        assert not {bracket_free(e.text) for e in a} & {bracket_free(e.text) for e in b}


def test_teacher_train_drops_test_and_dev_sentences() -> None:
    examples = synthetic_examples(10, seed=0)
    tests, dev = examples[:2], examples[2:4]  # one sentence each (two aspects per sentence)
    kept = teacher_train(examples, tests, dev)
    assert kept == examples[4:]


def test_main_writes_folds_and_checks_the_count(tmp_path: Path) -> None:
    examples = synthetic_examples(10, seed=0)
    data, run = tmp_path / "train.jsonl", tmp_path / "teacher"
    write_examples(data, examples)
    run.mkdir()
    write_examples(run / "dev.jsonl", examples[:4])
    (run / "run.json").write_text(json.dumps({"kind": RUN_KIND, "n_train": len(examples) - 4}))
    main(["--teacher-run", str(run), "--data", str(data), "--out", str(tmp_path / "oof")])
    a, b, dev = (
        read_examples(tmp_path / "oof" / f"{n}.jsonl").examples for n in ("fold-a", "fold-b", "dev")
    )
    spans = lambda xs: sorted((e.text, e.start, e.end, e.label) for e in xs)  # noqa: E731
    assert spans(a + b) == spans(examples[4:]) and spans(dev) == spans(examples[:4])
    (run / "run.json").write_text(json.dumps({"kind": RUN_KIND, "n_train": 5}))
    with pytest.raises(SystemExit):
        main(["--teacher-run", str(run), "--data", str(data), "--out", str(tmp_path / "x")])
