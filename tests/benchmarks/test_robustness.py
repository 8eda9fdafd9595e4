"""The robustness rules (training/augment.py), the suite and its metrics, augmentation in fit."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from absa.training.augment import (
    Sentence,
    add_diff,
    augment,
    load_lexicon,
    reverse_non_target,
    reverse_target,
    variants,
)
from absa.training.readers import read_examples
from absa.training.records import Example
from benchmarks.robustness.suite import KINDS, Unit, build_suite, flatten, score
from tests.helpers import data_dir, synthetic_examples, tiny_preset

ROOT = Path(__file__).resolve().parents[2]
LEX = load_lexicon()


def ex(text: str, term: str, label: str, nth: int = 0) -> Example:
    start = -1
    for _ in range(nth + 1):
        start = text.index(term, start + 1)
    return Example(text, start, start + len(term), label, "test")


def valid(e: Example, term: str) -> bool:
    return e.text[e.start : e.end] == term == e.term


# --------------------------------------------------------------------------- REVTGT


@pytest.mark.parametrize(
    ("text", "term", "label", "want", "want_label"),
    [
        (
            "The food was great but the service was slow .",
            "food",
            "positive",
            "The food was terrible but the service was slow .",
            "negative",
        ),
        (
            "The food was great but the service was slow .",
            "service",
            "negative",
            "The food was great but the service was fast .",
            "positive",
        ),
        (
            "The food was great, but the service was slow.",
            "food",
            "positive",
            "The food was terrible, but the service was slow.",
            "negative",
        ),
        ("The pizza was not good .", "pizza", "negative", "The pizza was good .", "positive"),
        ("The pizza wasn't good.", "pizza", "negative", "The pizza was good.", "positive"),
        (
            "Great food , rude staff .",
            "food",
            "positive",
            "Terrible food , rude staff .",
            "negative",
        ),
        ("BEST pizza in town !", "pizza", "positive", "WORST pizza in town !", "negative"),
        (
            "They serve an amazing pizza .",
            "pizza",
            "positive",
            "They serve a horrible pizza .",
            "negative",
        ),
        (
            "The fresh mozzarella was great .",
            "fresh mozzarella",
            "positive",
            "The fresh mozzarella was terrible .",
            "negative",
        ),
        (
            "The food and service were great .",
            "food",
            "positive",
            "The food and service were terrible .",
            "negative",
        ),
        (
            "The sushi is fresh and tasty .",
            "sushi",
            "positive",
            "The sushi is stale and tasteless .",
            "negative",
        ),
    ],
)
def test_reverse_target_flips_the_targets_words_and_label(
    text: str, term: str, label: str, want: str, want_label: str
) -> None:
    out = reverse_target(ex(text, term, label), LEX)
    assert out is not None
    assert out.text == want
    assert out.label == want_label
    assert valid(out, term)
    assert out.source == "test#revtgt"


@pytest.mark.parametrize(
    ("text", "term", "label"),
    [
        ("The food was ok .", "food", "neutral"),  # neutral: nothing to flip to
        ("The food was great but overpriced .", "food", "positive"),  # mixed polarity
        ("The food is cheap and good .", "food", "positive"),  # "cheap": no safe antonym
        ("The pizza was never good .", "pizza", "negative"),  # "never" cannot be dropped
        ("The food was great but the service was slow .", "service", "positive"),  # disagrees
        ("We ate the salmon .", "salmon", "positive"),  # no opinion word
    ],
)
def test_reverse_target_does_not_apply(text: str, term: str, label: str) -> None:
    assert reverse_target(ex(text, term, label), LEX) is None


# --------------------------------------------------------------------------- REVNON


def test_reverse_non_target_leaves_the_target_clause_alone() -> None:
    e = ex("The food was great but the service was slow .", "service", "negative")
    out = reverse_non_target(e, LEX)
    assert out is not None
    assert out.text == "The food was terrible but the service was slow ."
    assert out.label == "negative"
    assert valid(out, "service")
    tail = e.text[e.text.index("but") :]
    assert out.text.endswith(tail)


def test_reverse_non_target_flips_every_other_clause_and_keeps_offsets() -> None:
    e = ex("Great wine , awful decor , and the pasta was excellent .", "pasta", "positive")
    out = reverse_non_target(e, LEX)
    assert out is not None
    assert out.text == "Terrible wine , excellent decor , and the pasta was excellent ."
    assert valid(out, "pasta")
    assert out.start == out.text.index("pasta") != e.start


def test_reverse_non_target_needs_the_target_to_carry_its_own_label() -> None:
    # the service's clause says nothing: its label may come from the other clause
    e = ex("The service , however , was rude .", "service", "negative")
    assert reverse_non_target(e, LEX) is None
    # a neutral target in a clause with an opinion is left alone too
    assert (
        reverse_non_target(ex("The food was great , rude staff .", "food", "neutral"), LEX) is None
    )
    # nothing in other clauses
    assert reverse_non_target(ex("The food was great .", "food", "positive"), LEX) is None


def test_clauses_merge_bare_and_short_pieces() -> None:
    s = Sentence.parse("The food was great , fresh and tasty but the staff was rude .", LEX)
    words = [" ".join(s.words[lo:hi]) for lo, hi in s.clauses]
    assert words == ["the food was great , fresh and tasty", "the staff was rude"]
    s = Sentence.parse("Fast delivery , great food .", LEX)
    assert [" ".join(s.words[lo:hi]) for lo, hi in s.clauses] == ["fast delivery", "great food"]


# --------------------------------------------------------------------------- ADDDIFF


def test_add_diff_appends_an_opposite_clause_about_a_sibling_aspect() -> None:
    text = "The food was great but the service was slow ."
    food, service = ex(text, "food", "positive"), ex(text, "service", "negative")
    out = add_diff(food, LEX, random.Random(0), domain="restaurant", siblings=[food, service])
    assert out is not None
    assert out.label == "positive"
    assert valid(out, "food")
    assert out.text.startswith("The food was great but the service was slow ")
    assert out.text.endswith(" .")
    added = out.text[len(text) - 2 : -2]
    assert "the service" in added
    assert any(f" {w}" in added for w in LEX.add_words["suite"]["negative"])


def test_add_diff_uses_a_generic_aspect_not_in_the_sentence() -> None:
    for seed in range(20):
        e = ex("The staff were rude.", "staff", "negative")
        out = add_diff(e, LEX, random.Random(seed), domain="restaurant")
        assert out is not None and valid(out, "staff") and out.label == "negative"
        assert out.text.startswith("The staff were rude") and out.text.endswith(".")
        added = out.text[len("The staff were rude") :]
        assert " ," not in added  # untokenised text gets untokenised punctuation
        assert "staff" not in added
        assert any(a in added for a in LEX.aspects["suite"]["restaurant"])
        assert any(f" {w}" in added for w in LEX.add_words["suite"]["positive"])


def test_add_diff_neutral_targets_get_a_strong_opinion_and_keep_their_label() -> None:
    e = ex("We ordered the salmon .", "salmon", "neutral")
    words = {w for ws in LEX.add_words["suite"].values() for w in ws}
    for seed in range(10):
        out = add_diff(e, LEX, random.Random(seed), domain="laptop")
        assert out is not None and out.label == "neutral" and valid(out, "salmon")
        assert set(out.text.rstrip(" .").split()[-1:]) <= words


def test_variants_are_deterministic_given_the_seed() -> None:
    examples = synthetic_examples(12, seed=0)
    a = build_suite(examples, LEX, "restaurant", seed=3)
    b = build_suite(list(examples), LEX, "restaurant", seed=3)
    assert a == b
    c = build_suite(examples, LEX, "restaurant", seed=4)
    assert [u.variants["adddiff"].text for u in a] != [u.variants["adddiff"].text for u in c]


# --------------------------------------------------------------------------- metrics


def test_score_counts_accuracies_and_ars() -> None:
    o = [Example(f"s{i} good", 0, 2, "positive", f"o{i}") for i in range(3)]
    flip = Example("s0 bad", 0, 2, "negative", "v")
    units = [
        Unit(o[0], {"revtgt": flip, "adddiff": o[0]}),
        Unit(o[1], {"adddiff": o[1]}),
        Unit(o[2], {"revnon": o[2]}),
    ]
    assert [k for _, k, _ in flatten(units)] == [
        "original",
        "revtgt",
        "adddiff",
        "original",
        "adddiff",
        "original",
        "revnon",
    ]
    # unit 0 all right; unit 1 adddiff wrong; unit 2 original wrong
    predicted = ["positive", "negative", "positive", "positive", "neutral", "neutral", "positive"]
    r = score(units, predicted)
    assert r["n_units"] == 3
    assert r["counts"] == {"original": 3, "revtgt": 1, "revnon": 1, "adddiff": 2}
    assert r["accuracy"] == {"original": 2 / 3, "revtgt": 1.0, "revnon": 1.0, "adddiff": 0.5}
    assert r["ars"] == pytest.approx(1 / 3)
    assert r["ars_by_kind"] == {"revtgt": 1.0, "revnon": 0.0, "adddiff": 0.5}
    with pytest.raises(ValueError, match="6 predictions for 7"):
        score(units, predicted[:-1])


# --------------------------------------------------------------------------- augmentation


def test_augment_adds_the_requested_number_with_valid_spans() -> None:
    examples = synthetic_examples(30, seed=1)
    extra = augment(examples, seed=5, rate=0.5)
    assert len(extra) == 30  # round(0.5 * 60)
    assert {e.source.rsplit("#", 1)[1] for e in extra} == set(KINDS)
    by_source = {e.source: e for e in examples}
    for e in extra:
        source, kind = e.source.rsplit("#", 1)
        original = by_source[source]
        assert e.text[e.start : e.end] == e.term == original.term
        assert e.text != original.text
        assert e.label == original.label or kind == "revtgt"
    assert extra == augment(examples, seed=5, rate=0.5)
    assert augment(examples, seed=5, rate=0.0) == []
    with pytest.raises(ValueError):
        augment(examples, rate=-1)


def test_augment_never_uses_the_suite_clauses() -> None:
    examples = synthetic_examples(30, seed=1)
    by_source = {e.source: e for e in examples}
    extra = augment(examples, seed=5, rate=3.0)  # everything the rules give
    added = [
        e.text[len(by_source[e.source.rsplit("#", 1)[0]].text) :]
        for e in extra
        if e.source.endswith("#adddiff")
    ]
    assert len(added) == len(examples)
    suite_words = {w for ws in LEX.add_words["suite"].values() for w in ws}
    augment_words = {w for ws in LEX.add_words["augment"].values() for w in ws}
    connectors = {t.split("{")[0].replace(" ,", ",") for t in LEX.templates["augment"]}
    for clause in added:
        assert clause.split()[-1] in augment_words - suite_words
        assert any(clause.startswith(c) for c in connectors), clause


def test_fit_augments_train_only(small_glove: Path, tmp_path: Path, monkeypatch) -> None:
    import absa.training.run_record as record_mod
    import absa.training.train as train_mod
    import absa.training.train_data as data_mod

    seen: list = []
    real = data_mod.augment

    def spy(examples, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.extend(examples)
        return real(examples, *args, **kwargs)

    monkeypatch.setattr(data_mod, "augment", spy)
    monkeypatch.setattr(record_mod, "plot_history", lambda *a: None)  # no matplotlib import
    base = tiny_preset("atae-lstm", small_glove)
    preset = replace(base, train=replace(base.train, epochs=1, augment=0.5, dev_fraction=0.25))
    examples = synthetic_examples(16, seed=2)
    train_mod.fit(examples, None, preset, tmp_path / "run", progress=False)
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    dev = [json.loads(line) for line in (tmp_path / "run" / "dev.jsonl").open()]
    dev_texts = {d["text"] for d in dev}
    assert seen and not dev_texts & {e.text for e in seen}
    assert len(seen) + len(dev) == len(examples)
    assert info["augmented"] == round(0.5 * len(seen))
    assert info["n_train"] == len(seen) + info["augmented"]
    assert all(d["text"] in {e.text for e in examples} for d in dev)


# --------------------------------------------------------------------------- real data


def _test_set(name: str) -> list[Example]:
    path = data_dir() / "semeval14" / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return read_examples(path).examples


def test_suite_on_restaurant_test_set() -> None:
    examples = _test_set("Restaurants_Test_Gold.xml.seg")
    units = build_suite(examples, LEX, "restaurant", seed=0)
    r = score(units, [e.label for _, _, e in flatten(units)])
    assert r["counts"]["adddiff"] > 1000
    assert r["counts"]["revtgt"] > 300
    assert r["counts"]["revnon"] > 150
    assert r["ars"] == 1.0  # gold labels as predictions
    for u in units:
        for kind, v in u.variants.items():
            assert v.text[v.start : v.end] == u.original.term, kind
            assert v.text != u.original.text
            want = {"revtgt": {"positive": "negative", "negative": "positive"}}
            assert v.label == want.get(kind, {}).get(u.original.label, u.original.label)


def test_script_writes_a_result(tiny_run: Path, tmp_path: Path, monkeypatch) -> None:
    _test_set("Laptops_Test_Gold.xml.seg")
    spec = importlib.util.spec_from_file_location(
        "robustness_script", ROOT / "benchmarks" / "robustness.py"
    )
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(script, "OUT", tmp_path / "out")
    argv = ["robustness.py", "--model", str(tiny_run), "--datasets", "lap14", "--no-mams"]
    monkeypatch.setattr(sys, "argv", [*argv, "--name", "tiny", "--dump", str(tmp_path / "d")])
    script.main()
    result = json.loads((tmp_path / "out" / "tiny.json").read_text())
    lap = result["datasets"]["lap14"]
    assert result["model"]["kind"] == "run" and result["mams"] is None
    assert lap["n_units"] == lap["counts"]["original"] > 500
    assert 0.0 <= lap["ars"] <= lap["accuracy"]["original"] <= 1.0
    rows = (tmp_path / "d" / "lap14.jsonl").read_text().splitlines()
    assert len(rows) == sum(lap["counts"].values())
    assert {"predicted", "kind", "unit"} <= set(json.loads(rows[0]))


def test_variants_helper_reports_only_applicable_rules() -> None:
    e = ex("We ate the salmon .", "salmon", "positive")
    assert set(variants(e, LEX, use="suite", domain="restaurant", seed=0)) == {"adddiff"}


def test_lexicon_is_checked_when_loaded(tmp_path: Path) -> None:
    data = json.loads((ROOT / "training" / "lexicon.json").read_text())
    data["pairs"]["general"].append(["bad", "worse"])  # "bad" is already negative
    path = tmp_path / "lexicon.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="'bad' is listed as positive and negative"):
        load_lexicon(path)
    data["pairs"]["general"].pop()
    data["templates"]["suite"].append("and the {aspect} was {word}")
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="must start with"):
        load_lexicon(path)
