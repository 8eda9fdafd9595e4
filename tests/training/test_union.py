"""Combining training files: test sentences out (counted once), each sentence from one file;
oversampling a domain's files."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from absa.training.presets import TrainConfig
from absa.training.readers import read_examples
from absa.training.rundir import read_info
from absa.training.train import fit
from absa.training.train_data import prepare_data
from absa.training.union import combine, combine_more, oversample
from tests.helpers import synthetic_examples, tiny_preset


def _read(tmp_path: Path, name: str, records: list[tuple[str, str, str]]) -> list:
    path = tmp_path / name
    path.write_text("".join(f"{s}\n{t}\n{lab}\n" for s, t, lab in records), encoding="utf-8")
    return read_examples(path).examples


@pytest.fixture
def files(tmp_path: Path) -> dict[str, list]:
    return {
        # an original set, as the XML-derived files write it ("didn't")
        "rest": _read(
            tmp_path,
            "rest.seg",
            [
                ("The $T$ didn't arrive .", "soup", "-1"),
                ("Great $T$ here .", "sushi", "1"),
                ("Great $T$ here .", "sushi", "1"),  # an exact duplicate in one file: kept
                ("The $T$ was in the test .", "pasta", "1"),
            ],
        ),
        # a new set: the same sentences in another tokenisation and label spelling
        "new": _read(
            tmp_path,
            "new.raw",
            [
                ("the $T$ did n't arrive .", "soup", "Negative"),  # same example
                ("the soup did n't $T$ .", "arrive", "Neutral"),  # same sentence, new aspect
                ("great $T$ here .", "sushi", "Neutral"),  # same aspect, another label
                ("the $T$ was in the test .", "pasta", "Positive"),  # a test sentence
                ("A $T$ nobody else wrote .", "tv", "Positive"),
            ],
        ),
        "test": _read(
            tmp_path,
            "test.seg",
            [("The $T$ was in the test .", "pasta", "1"), ("Fresh $T$ .", "bread", "1")],
        ),
        "test2": _read(tmp_path, "test2.seg", [("the pasta was in the $T$ .", "test", "0")]),
    }


def test_test_sentences_dropped_and_counted_once(files: dict[str, list]) -> None:
    tests = {"test": files["test"], "test2": files["test2"]}
    kept, reports = combine([("rest", files["rest"])], tests)
    assert [e.term for e in kept] == ["soup", "sushi", "sushi"]
    (r,) = reports
    # the pasta sentence is in both test sets: dropped once, listed under each
    assert (r.read, r.test_overlap, r.kept) == (4, 1, 3)
    assert r.test_hits == {"test": 1, "test2": 1}


def test_fresh_file_gives_no_sentence_twice(
    files: dict[str, list], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="absa.training.union")
    order = [("rest", files["rest"]), ("new", files["new"])]
    kept, (rest, new) = combine(order, {"test": files["test"]}, fresh=frozenset({"new"}))
    assert [e.term for e in kept] == ["soup", "sushi", "sushi", "tv"]
    assert rest.kept == 3
    assert (new.read, new.test_overlap, new.seen_before) == (5, 1, 3)
    assert (new.same_example, new.other_label, new.kept) == (1, 1, 1)
    assert "new: 5 read, 1 dropped" in caplog.text


def test_files_not_fresh_keep_shared_sentences(files: dict[str, list]) -> None:
    # the original sets share sentences too (MAMS and Rest14): they stay as shipped
    order = [("rest", files["rest"]), ("new", files["new"])]
    kept, (_, new) = combine(order, {"test": files["test"]})
    assert (new.seen_before, new.kept) == (0, 4)
    assert len(kept) == 7


def test_only_later_files_lose_a_shared_sentence(files: dict[str, list]) -> None:
    # the order decides: with the new set first, it keeps the sentences and rest loses them
    order = [("new", files["new"]), ("rest", files["rest"])]
    kept, (new, rest) = combine(order, {}, fresh=frozenset({"new", "rest"}))
    assert new.kept == 5 and new.seen_before == 0
    assert (rest.seen_before, rest.same_example, rest.other_label, rest.kept) == (4, 2, 2, 0)
    assert len(kept) == 5


def test_oversample_repeats_the_chosen_files_examples_after_the_rest(tmp_path: Path) -> None:
    laptops = _read(tmp_path, "Laptops_Train.xml.seg", [("The $T$ is fast .", "cpu", "1")] * 2)
    rest = _read(tmp_path, "rest.seg", [("Great $T$ .", "sushi", "1"), ("Bad $T$ .", "tea", "-1")])
    examples = [rest[0], laptops[0], rest[1], laptops[1]]
    out, added = oversample(examples, ["Laptops_Train.xml.seg"], 3)
    assert added == 4 and out[:4] == examples
    assert out[4:] == [laptops[0], laptops[1]] * 2
    assert oversample(examples, ["Laptops_Train.xml.seg"], 1) == (examples, 0)
    assert oversample(examples, [], 3) == (examples, 0)
    assert oversample(examples, ["other.xml"], 3) == (examples, 0)


def test_oversample_is_a_list_of_endings() -> None:
    with pytest.raises(ValueError, match="list of file-name endings"):
        TrainConfig(oversample="Laptops_Train.xml.seg")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="oversample_times"):
        TrainConfig(oversample=("a.xml",), oversample_times=0)


def test_training_oversamples_train_never_dev(small_glove: Path, tmp_path: Path) -> None:
    train = [
        replace(e, source=f"{'b.xml' if i % 3 else 'a.xml'}:{i}")
        for i, e in enumerate(synthetic_examples(12, seed=0))
    ]
    dev = synthetic_examples(6, seed=5)
    base = tiny_preset("atae-lstm", small_glove)
    preset = replace(
        base, train=replace(base.train, epochs=1, oversample=("a.xml",), oversample_times=3)
    )
    data = prepare_data(
        train, [replace(e, source="a.xml:1") for e in dev], preset, torch.device("cpu")
    )
    chosen = [e.source for e in train if e.source.startswith("a.xml")]
    assert len(chosen) == len(train) // 3 and data.oversampled == 2 * len(chosen)
    assert len(data.train) == len(train) + 2 * len(chosen) and len(data.dev) == len(dev)
    assert [e.source for e in data.train[len(train) :]] == chosen * 2
    fit(train, dev, preset, tmp_path / "run", progress=False)
    info = read_info(tmp_path / "run")
    assert (info["oversampled"], info["n_train"]) == (2 * len(chosen), len(train))
    saved = json.loads((tmp_path / "run" / "train_config.json").read_text())
    assert (saved["oversample"], saved["oversample_times"]) == (["a.xml"], 3)


def test_combine_more_is_train_then_fresh_files(files: dict[str, list]) -> None:
    # absa train --train-more and the calibration's dev rebuild both make their union so
    kept, (train, new) = combine_more(files["rest"], [("new", files["new"])], {"t": files["test"]})
    assert train.name == "--train" and train.seen_before == 0
    assert (new.seen_before, new.kept) == (3, 1)
    assert [e.term for e in kept] == ["soup", "sushi", "sushi", "tv"]


def test_test_sentence_in_penn_treebank_brackets_is_dropped(tmp_path: Path) -> None:
    # Rest14's test file writes "(" as -LRB-; MAMS train holds the same sentence with "(":
    # normalise_text keeps "lrb", so the two spellings differed and the sentence was trained
    # on (1.8.0); combine compares by bracket_free
    test = _read(
        tmp_path,
        "test.seg",
        [("The $T$ was good , but -LRB- including 2 drinks , $ 100/person -RRB- ...", "food", "1")],
    )
    mams = tmp_path / "train.xml"
    text = "The food was good, but (including 2 drinks, $100/person)."
    mams.write_text(
        f'<sentences><sentence><text>{text}</text><aspectTerms><aspectTerm term="drinks" '
        f'polarity="neutral" from="34" to="40"/></aspectTerms></sentence></sentences>',
        encoding="utf-8",
    )
    train = read_examples(mams).examples
    kept, (rep,) = combine([("mams", train)], {"rest14": test})
    assert kept == [] and rep.test_hits == {"rest14": 1}
    # and the other way round: a PTB-spelled training sentence, a test file with brackets
    kept, (rep,) = combine([("rest", test)], {"mams": train})
    assert kept == [] and rep.test_overlap == 1
