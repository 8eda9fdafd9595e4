"""The transfer set: the shipped extractor's spans that no annotation covers, no test sentence."""

from __future__ import annotations

import json
from pathlib import Path

from absa.model.extractor import DEFAULT_EXTRACTOR_DIR, Extractor
from absa.training.overlap import bracket_free
from absa.training.readers import read_examples
from absa.training.records import Example
from absa.training.substitute import copies, sentence_copies
from absa.training.transfer_set import Candidate, candidates, write_jsonl


def _extract(texts: list[str]) -> list[list[tuple[int, int, float]]]:
    ext = Extractor.load(DEFAULT_EXTRACTOR_DIR, threads=1)
    return [[(s.start, s.end, s.confidence) for s in f] for f in ext.extract(texts)]


def test_unannotated_aspects_of_training_sentences(tmp_path: Path) -> None:
    train = tmp_path / "train.seg"
    train.write_text(
        "The $T$ was great but the service was slow .\nfood\n1\n"
        "The $T$ is bright and the battery life is short .\nscreen\n1\n"
        "The $T$ was cold and the waiter was rude .\nsoup\n-1\n",
        encoding="utf-8",
    )
    examples = read_examples(train).examples
    banned = {bracket_free(examples[2].text)}  # as if the soup sentence were in a test set
    found = candidates(examples, _extract, banned)
    aspects = {c.aspect for c in found}
    assert {"service", "battery life"} <= aspects
    assert not aspects & {"food", "screen", "soup", "waiter"}  # annotated, or a test sentence
    assert all(c.source.startswith(f"{train}:") for c in found)
    out = tmp_path / "transfer.jsonl"
    write_jsonl(out, found)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(found)
    assert all(r["text"][r["start"] : r["end"]] == r["aspect"] for r in rows)
    # read back as unlabelled aspects, they point at the same spans
    assert {r["aspect"] for r in rows} == aspects


def test_confidence_threshold(tmp_path: Path) -> None:
    train = tmp_path / "train.seg"
    train.write_text("The $T$ was great but the service was slow .\nfood\n1\n", encoding="utf-8")
    examples = read_examples(train).examples
    assert candidates(examples, _extract, set(), min_confidence=1.01) == []


def test_test_sentence_in_another_bracket_spelling_gives_no_candidate_or_copy() -> None:
    # the caller bans test sentences by their bracket_free form; Rest14's test file writes
    # "(" as -LRB-, MAMS train (whose sentences reach the transfer set) writes "("
    test = "The food was good , but -LRB- including 2 drinks , $ 100/person -RRB- ..."
    banned = {bracket_free(test)}
    text = "The food was good, but (including 2 drinks, $100/person)."
    start = text.index("drinks")
    train = [Example(text, start, start + 6, "neutral", "mams/train.xml:7")]
    calls: list[list[str]] = []

    def extract(texts: list[str]) -> list[list[tuple[int, int, float]]]:
        calls.append(texts)
        return [[(4, 8, 0.9)] for _ in texts]

    assert candidates(train, extract, banned) == []
    assert calls == [[]]
    found = [Candidate(text, start, start + 6, 1.0, "mams/train.xml:7")]
    near = {"good": ["great"], "food": ["meal"]}
    assert copies(found, near, banned, n=3, p=1.0) == []
    assert sentence_copies([text], near, banned, n=3, p=1.0) == []
    # a PTB-spelled training sentence against a test file written with brackets
    ptb = Candidate(test, 4, 8, 1.0, "rest.seg:1")
    assert copies([ptb], near, {bracket_free(text)}, n=3, p=1.0) == []
