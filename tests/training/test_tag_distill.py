"""Distilling a tagger: the KD term, a student that learns a teacher extractor's spans from
unlabelled sentences alone, and ``--unlabelled`` on the command line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from absa.cli import main
from absa.model.spans import TAGS, B, I, O, Transitions, tag_marginals
from absa.training.sentences import Sentence
from absa.training.tag_distill import kd_loss, teacher_word_probs
from tests.cli.test_extract_cli import write_xml
from tests.helpers import extraction_sentences

TINY = {"hidden_size": 16, "char_dim": 8, "char_filters": 8, "dropout": 0.0}


def test_kd_loss_is_zero_only_where_student_and_teacher_agree() -> None:
    torch.manual_seed(0)
    soft = torch.softmax(torch.randn(2, 4, 3), -1)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    same = torch.log(soft)
    assert float(kd_loss(same, soft, mask, 2.0)) == pytest.approx(0.0, abs=1e-6)
    other = same.clone()
    other[0, 3] = torch.tensor([9.0, -9.0, 0.0])  # a padded word: not counted
    assert float(kd_loss(other, soft, mask, 2.0)) == pytest.approx(0.0, abs=1e-6)
    other[1, 0] = torch.tensor([9.0, -9.0, 0.0])
    assert float(kd_loss(other, soft, mask, 2.0)) > 0.1


def test_a_student_learns_the_teachers_spans_from_unlabelled_text(
    extractor_artifact: Path, small_glove: Path
) -> None:
    from absa.cli.extract import predict_spans
    from absa.model.tagger import TaggerConfig
    from absa.training.tagging import TagTrainConfig, fit_tagger
    from absa.training.tagging import predict_spans as student_spans

    sentences = extraction_sentences()
    texts = [s.text for s in sentences]
    teacher = predict_spans(extractor_artifact, texts)
    # the labelled set says "no aspects anywhere"; with distill=1 only the teacher teaches
    wrong = [Sentence(t, ()) for t in texts[:3]]
    kd = {"teacher": str(extractor_artifact), "distill": 1.0, "temperature": 1.0}
    tcfg = TagTrainConfig(epochs=30, patience=100, batch_size=8, lr=0.02,
                          glove=str(small_glove), glove_top_k=0, **kd)  # fmt: skip
    run = fit_tagger(wrong, sentences, TaggerConfig(**TINY), tcfg, unlabelled=texts)
    assert student_spans(run.net, run.text, texts) == teacher
    assert run.dev["f1"] == 100.0


def test_unlabelled_files_need_a_teacher_and_skip_known_sentences(
    extractor_artifact: Path, small_glove: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    sentences = extraction_sentences()
    train = write_xml(tmp_path / "train.xml", sentences[:15])
    extra = write_xml(tmp_path / "extra.xml", sentences[10:])  # 5 of them are in train
    train_cfg = {"glove": str(small_glove), "glove_top_k": 0, "epochs": 2, "batch_size": 8}
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"model": TINY, "train": train_cfg}))
    args = ["train", "--task", "extract", "--train", str(train), "--dev", str(train),
            "--config", str(cfg), "--unlabelled", str(extra)]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "r0")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "teacher" in err
    train_cfg["teacher"] = str(extractor_artifact)
    cfg.write_text(json.dumps({"model": TINY, "train": train_cfg}))
    assert main([*args, "--out", str(tmp_path / "r1")]) == 0
    info = json.loads((tmp_path / "r1" / "run.json").read_text())
    assert info["sentences"]["unlabelled"] == len(sentences) - 15
    teacher = info["inputs"]["teacher"]  # which teacher, by the sha256 of its files
    names = {Path(f["path"]).name: f["sha256"] for f in teacher["files"]}
    onnx = json.loads((extractor_artifact / "metadata.json").read_text())["files"]
    assert teacher["path"] == str(extractor_artifact) and names["vocab.json"] == onnx["vocab.json"]


def brute_marginals(probs: np.ndarray, learned: Transitions) -> np.ndarray:
    """P(word t is tagged k) summed over every tag sequence the decoder allows (I only after
    B or I, B only after O), each weighted as Viterbi scores it."""
    n, k = probs.shape
    out = np.zeros((n, k))
    logp = np.log(probs)
    for path in itertools.product(range(k), repeat=n):
        pairs = zip((O, *path[:-1]), path, strict=True)
        if any(t == I and p == O or t == B and p != O for p, t in pairs):
            continue
        score = learned.start[path[0]] + sum(logp[t, tag] for t, tag in enumerate(path))
        weight = np.exp(score + sum(learned.pairs[a, b] for a, b in itertools.pairwise(path)))
        out[np.arange(n), list(path)] += weight
    return out / out.sum(1, keepdims=True)


def test_crf_tag_marginals_are_the_brute_force_ones() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 7))
        probs = rng.dirichlet(np.ones(len(TAGS)), size=n)
        learned = Transitions(rng.normal(0, 2, len(TAGS)), rng.normal(0, 2, (3, 3)))
        np.testing.assert_allclose(tag_marginals(probs, learned), brute_marginals(probs, learned),
                                   rtol=1e-9, atol=1e-12)  # fmt: skip


def test_a_crf_teachers_targets_are_its_marginals_not_its_emission_softmax(
    crf_extractor_artifact: Path,
) -> None:
    """A CRF teacher's targets were the per-word softmax of its emissions, which is not its
    distribution (the shipped extractor decodes "wine" of "The wine list was short" B, at a
    marginal of 0.98, and its softmax said I 0.77): now its per-word marginals."""
    from absa.model.extractor import Extractor

    texts = [s.text for s in extraction_sentences() if len(s.text.split()) <= 9][:6]
    assert len(texts) >= 3
    ext = Extractor.load(crf_extractor_artifact, device="cpu", threads=1)
    _, per_text = ext.window_probs(texts)
    got = teacher_word_probs(crf_extractor_artifact, texts)
    assert ext.learned is not None and len(got) == len(texts)
    softmax_apart = 0.0
    for rows, (softmax,) in zip(got, per_text, strict=True):
        want = brute_marginals(softmax.astype(np.float64), ext.learned)
        np.testing.assert_allclose(rows, want, atol=1e-6)
        softmax_apart = max(softmax_apart, float(np.abs(softmax - want).max()))
    assert softmax_apart > 0.05  # the transitions matter here: the old targets were others


def test_a_teacher_without_a_crf_keeps_its_softmax(extractor_artifact: Path) -> None:
    from absa.model.extractor import Extractor

    texts = [s.text for s in extraction_sentences()[:4]]
    ext = Extractor.load(extractor_artifact, device="cpu", threads=1)
    _, per_text = ext.window_probs(texts)
    assert ext.learned is None
    for rows, windows in zip(teacher_word_probs(extractor_artifact, texts), per_text, strict=True):
        np.testing.assert_array_equal(rows, np.concatenate(windows))


QUOTED = "I loved the 'pasta' but the wine list was short"


def test_a_student_reads_words_as_its_teacher_does(small_glove: Path) -> None:
    """The shipped extractor reads words with tokenizer 1 ("'pasta" one word), new runs with
    2 ("'" and "pasta"): a student of 12 words took the teacher's 11 rows, and every word
    after the quote its neighbour's target. The student now reads as its teacher does."""
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR
    from absa.model.tagger import TaggerConfig
    from absa.model.tagtext import tag_tokens
    from absa.model.text import TOKENIZER
    from absa.training.tagging import TagTrainConfig, encode, fit_tagger

    assert TOKENIZER == 2 and len(tag_tokens(QUOTED, 1)) == 11 and len(tag_tokens(QUOTED, 2)) == 12
    sentences = [*extraction_sentences(), Sentence(QUOTED, ())]
    kd = {"teacher": str(DEFAULT_EXTRACTOR_DIR), "distill": 0.5}
    tcfg = TagTrainConfig(epochs=1, batch_size=8, glove=str(small_glove), glove_top_k=0, **kd)
    run = fit_tagger(sentences, sentences[:4], TaggerConfig(**TINY), tcfg)
    assert run.text.tokenizer == 1  # the teacher's, recorded in the run's pipeline
    data = encode(run.text, sentences, teacher=DEFAULT_EXTRACTOR_DIR)
    want = teacher_word_probs(DEFAULT_EXTRACTOR_DIR, [s.text for s in sentences])
    assert data.soft is not None
    for window, soft, rows in zip(data.windows, data.soft, want, strict=True):
        assert len(window.tokens) == len(soft) == len(rows)
        np.testing.assert_array_equal(soft, rows)
    (words,) = run.text.encode(QUOTED)
    assert [t.text for t in words.tokens][3] == "'pasta"


def test_a_student_pipeline_of_another_word_tokenizer_is_refused(
    crf_run: Path, small_glove: Path
) -> None:
    """encode() with a teacher that splits text otherwise is refused, naming both versions,
    not trained on targets one word off."""
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR
    from absa.model.tagtext import load_tag_text
    from absa.training.tagging import encode

    student = load_tag_text(crf_run)  # a new run's pipeline: tokenizer 2
    assert student.tokenizer == 2
    with pytest.raises(ValueError, match="word tokenizer 1.*word tokenizer 2"):
        encode(student, [Sentence(QUOTED, ())], teacher=DEFAULT_EXTRACTOR_DIR)
