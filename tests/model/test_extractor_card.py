"""The extractor's model card: its data statement comes from what the run recorded."""

from __future__ import annotations

import json
from pathlib import Path

from absa.model.extractor import DEFAULT_EXTRACTOR_DIR
from absa.model.extractor_card import data_statement, render_extractor


def test_the_shipped_cards_data_statement_is_its_runs() -> None:
    """The shipped extractor's run read SemEval-2014, MAMS and ACOS laptop training files
    and dropped the sentences of the three test sets it reports (--exclude)."""
    meta = json.loads((DEFAULT_EXTRACTOR_DIR / "metadata.json").read_text(encoding="utf-8"))
    text = data_statement(meta["train"])
    for corpus in ("SemEval-2014 Task 4", "MAMS", "ACOS laptop"):
        assert corpus in text
    assert "SemEval-2015" not in text and "other file" not in text
    for f in meta["train"]["data"]["exclude"]:
        assert f"`{f['path']}`" in text
    assert "are dropped from training" in text
    card = (DEFAULT_EXTRACTOR_DIR / "README.md").read_text(encoding="utf-8")
    assert text in card  # the shipped card says it


def test_a_run_that_recorded_no_data_gets_no_claim_about_it(extractor_artifact: Path) -> None:
    """The tiny test extractor's run recorded its seed alone: its card claimed SemEval-2014,
    MAMS and ACOS, and that every reported test set was dropped from training."""
    card = (extractor_artifact / "README.md").read_text(encoding="utf-8")
    (data,) = [line for line in card.splitlines() if line.startswith("Data:")]
    assert data == "Data: not recorded by the run."
    assert "dropped from training" not in card


def test_unknown_and_known_files_and_no_exclude() -> None:
    train = {"data": {"train": [
        {"path": "/d/semeval15/restaurant_train.raw", "sha256": "a" * 64},
        {"path": "/home/me/reviews.jsonl", "sha256": "b" * 64},
    ]}}  # fmt: skip
    text = data_statement(train)
    assert text.startswith("Data: SemEval-2015 Task 12 (Pontiki et al. 2015)")
    assert "1 other file listed above" in text and "the run had no --exclude files" in text
    assert text in render_extractor({"train": train})


def test_the_cards_domain_and_language_lines_follow_the_run_not_a_fixed_text(
    extractor_artifact: Path,
) -> None:
    """Every card said its annotation was SemEval-2014 / MAMS / ACOS and that it was trained
    on restaurant and laptop reviews, whatever the run read."""
    card = (extractor_artifact / "README.md").read_text(encoding="utf-8")
    assert "SemEval-2014 / MAMS / ACOS" not in card and "restaurant and laptop" not in card
    assert "follows the annotation of its training data" in card
    shipped = (DEFAULT_EXTRACTOR_DIR / "README.md").read_text(encoding="utf-8")
    meta = json.loads((DEFAULT_EXTRACTOR_DIR / "metadata.json").read_text(encoding="utf-8"))
    assert shipped == render_extractor(meta)  # the shipped card is what its metadata makes
    assert "annotation of its training data (SemEval-2014 Task 4" in shipped


def test_the_end_to_end_numbers_name_the_sentiment_model_they_were_measured_with() -> None:
    """The card said "classified by the shipped sentiment model" of numbers measured with
    1.2.0, long after 1.8.0 shipped (a user measured 70.17 where it said 66.70)."""
    rep = {"precision": 70.0, "recall": 70.0, "f1": 70.0}
    named = {"benchmark": {"end_to_end": {"rest14": {**rep, "sentiment_model": "m:1.8.0"}}}}
    assert "classified by the sentiment model m:1.8.0;" in render_extractor(named)
    older = {"benchmark": {"end_to_end": {"rest14": rep}}}
    assert "classified by the sentiment model shipped then;" in render_extractor(older)
