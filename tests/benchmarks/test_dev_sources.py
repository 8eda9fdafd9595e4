"""benchmarks/dev_sources.py: a run's dev split scored per training file."""

from __future__ import annotations

from pathlib import Path

from absa.training.evaluate import evaluate
from absa.training.records import Example
from absa.training.rundir import read_dev_examples, write_examples
from benchmarks import dev_sources
from tests.helpers import synthetic_examples, write_3line, write_jsonl


def test_each_dev_example_is_scored_with_the_file_its_sentence_came_from(
    tiny_run: Path, tmp_path: Path
) -> None:
    dev = read_dev_examples(tiny_run)  # the 12 synthetic sentences, 24 aspects
    examples = synthetic_examples(12, seed=0)
    # the first 4 sentences in one file, the next 6 in another (in another format and
    # casing), the last 2 in none
    a = write_jsonl(tmp_path / "a.jsonl", examples[:8])
    cased = [e.__class__(e.text.upper(), e.start, e.end, e.label, e.source) for e in examples]
    b = write_3line(tmp_path / "b.raw", cased[8:20])
    files = {"a": a, "b": b}
    groups = dev_sources.by_source(dev, files)
    assert {k: len(v) for k, v in groups.items()} == {"a": 8, "b": 12, "other": 4}
    scores = dev_sources.score(tiny_run, dev, files)
    assert [scores[k]["n"] for k in ("a", "b", "other", "all")] == [8, 12, 4, 24]
    whole = evaluate(tiny_run, dev)
    assert scores["all"]["accuracy"] == round(whole["accuracy"] * 100, 2)
    part = evaluate(tiny_run, groups["b"])
    assert scores["b"]["macro_f1"] == round(part["macro_f1"] * 100, 2)


def test_sources_tell_each_sentence_the_first_file_that_holds_it(tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    write_examples(first, [Example("The food was good", 4, 8, "positive")])
    write_examples(
        second,
        [
            Example("the food was good .", 4, 8, "positive"),  # the same sentence, normalised
            Example("The screen is dim", 4, 10, "negative"),
        ],
    )
    where = dev_sources.sources({"first": first, "second": second})
    assert where == {"thefoodwasgood": "first", "thescreenisdim": "second"}
