"""Distillation through a transfer set: unlabelled aspects whose only target is the
teacher's probabilities (``absa train --transfer``; training/distill.py, train.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from absa.cli import main
from absa.training.distill import kd_loss, mixed_loss
from absa.training.evaluate import predict_examples
from absa.training.presets import TrainConfig
from absa.training.records import DataError, Example
from absa.training.rundir import read_info
from absa.training.train import fit
from absa.training.transfer_set import Candidate, read_jsonl, write_jsonl
from tests.helpers import synthetic_examples, tiny_preset
from tests.helpers import write_jsonl as write_examples

LABELS = ("negative", "neutral", "positive")


def as_candidates(examples: list[Example]) -> list[Candidate]:
    return [Candidate(e.text, e.start, e.end, 0.9, e.source) for e in examples]


# --------------------------------------------------------------------------- the loss


def test_mixed_loss_never_reads_the_label_of_an_unlabelled_item() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 3)
    soft = torch.softmax(torch.randn(4, 3), -1)
    gold = torch.tensor([True, True, False, False])
    y = torch.tensor([0, 1, 2, 0])

    def loss(labels: list[int]) -> float:
        return float(mixed_loss(logits, torch.tensor(labels), soft, gold, 0.3))

    assert loss([0, 1, 0, 2]) == pytest.approx(loss(y.tolist()))  # items 3-4: no label
    assert loss([2, 1, 2, 0]) != pytest.approx(loss(y.tolist()))  # item 1 has one
    label = F.cross_entropy(logits, y, reduction="none")
    kd = F.cross_entropy(logits, soft, reduction="none")
    want = torch.cat([0.7 * label[:2] + 0.3 * kd[:2], kd[2:]]).mean()
    assert float(mixed_loss(logits, y, soft, gold, 0.3)) == pytest.approx(float(want))


def test_mixed_loss_with_every_label_is_the_usual_mix() -> None:
    torch.manual_seed(1)
    logits, soft = torch.randn(5, 3), torch.softmax(torch.randn(5, 3), -1)
    y = torch.tensor([0, 1, 2, 1, 0])
    usual = 0.5 * F.cross_entropy(logits, y, label_smoothing=0.1) + 0.5 * F.cross_entropy(
        logits, soft
    )
    got = mixed_loss(logits, y, soft, torch.ones(5, dtype=torch.bool), 0.5, label_smoothing=0.1)
    assert float(got) == pytest.approx(float(usual), rel=1e-6)


def test_kd_loss_at_temperature_one_is_the_soft_cross_entropy() -> None:
    torch.manual_seed(2)
    logits, soft = torch.randn(6, 3), torch.softmax(torch.randn(6, 3), -1)
    assert float(kd_loss(logits, soft, 1.0)) == pytest.approx(float(F.cross_entropy(logits, soft)))


def test_kd_loss_at_a_temperature_is_least_where_the_softened_student_is_the_teacher() -> None:
    # the student's logits log p (any shift) match the teacher exactly: the gradient is 0,
    # and at T = 3 the loss is T^2 times the entropy of the teacher softened by T
    soft = torch.tensor([[0.9, 0.08, 0.02], [0.2, 0.5, 0.3]])
    logits = (torch.log(soft) + 1.5).requires_grad_()
    loss = kd_loss(logits, soft, 3.0)
    loss.backward()
    assert logits.grad is not None and float(logits.grad.abs().max()) < 1e-6
    p3 = torch.softmax(torch.log(soft) / 3.0, -1)
    entropy = -(p3 * torch.log(p3)).sum(-1).mean()
    assert float(loss) == pytest.approx(9.0 * float(entropy), rel=1e-5)
    # softening spreads the teacher's mass: its confident row gives the others more weight
    assert float(p3[0, 2]) > 0.1 > float(soft[0, 2])


def test_mixed_loss_passes_the_temperature_to_its_teacher_term() -> None:
    torch.manual_seed(3)
    logits, soft = torch.randn(4, 3), torch.softmax(torch.randn(4, 3), -1)
    y, none = torch.tensor([0, 1, 2, 0]), torch.zeros(4, dtype=torch.bool)
    got = mixed_loss(logits, y, soft, none, 0.5, temperature=2.0)
    assert float(got) == pytest.approx(float(kd_loss(logits, soft, 2.0)), rel=1e-6)
    assert float(got) != pytest.approx(float(mixed_loss(logits, y, soft, none, 0.5)))


def test_a_temperature_must_be_positive() -> None:
    with pytest.raises(ValueError, match="distill_temperature"):
        TrainConfig(distill_temperature=0.0)


# --------------------------------------------------------------------------- the file


def test_transfer_jsonl_round_trip(tmp_path: Path) -> None:
    found = as_candidates(synthetic_examples(3, seed=4))
    write_jsonl(tmp_path / "t.jsonl", found)
    assert read_jsonl([tmp_path / "t.jsonl"]) == found


def test_the_confidence_is_written_to_six_decimals(tmp_path: Path) -> None:
    # the extractor's last bits differ between CPUs; the file must not
    text = "the food was great"
    near = [
        Candidate(text, 4, 8, 0.7123456789012, "s:1"),
        Candidate(text, 4, 8, 0.7123456789, "s:1"),
    ]
    write_jsonl(tmp_path / "a.jsonl", near[:1])
    write_jsonl(tmp_path / "b.jsonl", near[1:])
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert read_jsonl([tmp_path / "a.jsonl"])[0].confidence == 0.712346


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "t.jsonl:2: invalid JSON"),
        ("[1, 2]", "t.jsonl:2: a line must be a JSON object"),
        ('{"text": "the food", "start": 4, "end": 40}', "t.jsonl:2: 'start' and 'end'"),
        ('{"text": "the food", "start": "4", "end": 8}', "t.jsonl:2: 'start' and 'end'"),
        ('{"text": "the food", "start": 4, "end": 8, "aspect": "wine"}', "'wine' is not"),
        ('{"start": 0, "end": 1}', "t.jsonl:2: 'text' must be"),
    ],
)
def test_a_bad_transfer_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "the food", "start": 4, "end": 8}\n' + line + "\n")
    with pytest.raises(DataError, match=message.replace("[", r"\[")):
        read_jsonl([path])


# --------------------------------------------------------------------------- training


def student(teacher: Path, transfer: list[Candidate], glove: Path, out: Path) -> list[str]:
    """A student trained on a few true labels (the teacher's soft targets weigh 0 on them)
    and on ``transfer``: its labels for the transfer aspects."""
    preset = tiny_preset("atae-lstm", glove)
    preset = replace(preset, train=replace(preset.train, teacher=str(teacher), distill=0.0))
    labelled = synthetic_examples(4, seed=7)  # dev too: a true-label dev set elsewhere would
    fit(labelled, labelled, preset, out, progress=False, transfer=transfer)  # pick against lies
    return labels_of(out, [Example(c.text, c.start, c.end, "neutral") for c in transfer])


def labels_of(model: Path, examples: list[Example]) -> list[str]:
    probs, names = predict_examples(model, examples)
    return [names[k] for k in probs.argmax(1)]


def agreement(a: list[str], b: list[str]) -> float:
    return float(np.mean([x == y for x, y in zip(a, b, strict=True)]))


def test_the_transfer_set_teaches_the_teachers_labels(
    liar: Path, tiny_run: Path, small_glove: Path, tmp_path: Path
) -> None:
    """Where no label exists, the student follows its teacher: with the liar it learns the
    lies, with an honest teacher (tiny_run, the same sentences' true labels) the truth."""
    unlabelled = synthetic_examples(12, seed=0)  # both teachers' sentences, labels unread
    lies, truth = labels_of(liar, unlabelled), labels_of(tiny_run, unlabelled)
    assert agreement(lies, truth) <= 0.5  # the teachers disagree on the non-neutral aspects
    transfer = as_candidates(unlabelled)
    fooled = student(liar, transfer, small_glove, tmp_path / "liar")
    taught = student(tiny_run, transfer, small_glove, tmp_path / "honest")
    assert agreement(fooled, lies) >= 0.8, (fooled, lies)
    assert agreement(taught, truth) >= 0.8, (taught, truth)
    info = read_info(tmp_path / "liar")
    assert info["transfer"]["used"] == info["transfer"]["given"] == len(unlabelled)
    assert info["transfer"]["teacher_labels"] == {lab: lies.count(lab) for lab in LABELS}
    assert info["n_train"] == 8  # the labelled examples only


def test_transfer_aspects_of_dev_sentences_are_dropped(
    liar: Path, small_glove: Path, tmp_path: Path
) -> None:
    transfer = as_candidates(synthetic_examples(4, seed=0))  # 4 sentences, 2 aspects each
    transfer = [  # as read from two files, the second one's copies of the first one's
        replace(c, source=f"subst0:/data/b.xml:{i}" if i % 3 == 0 else f"/data/a.xml:{i}")
        for i, c in enumerate(transfer)
    ]
    dev = synthetic_examples(12, seed=7)[:2] + [synthetic_examples(4, seed=0)[0]]
    preset = tiny_preset("atae-lstm", small_glove)
    preset = replace(preset, train=replace(preset.train, teacher=str(liar), epochs=1))
    fit(
        synthetic_examples(12, seed=7)[2:], dev, preset, tmp_path, progress=False, transfer=transfer
    )
    about = read_info(tmp_path)["transfer"]
    assert (about["given"], about["dropped_dev_sentences"], about["used"]) == (8, 2, 6)
    # the used ones by file: candidates 2-7 (0 and 1 are the dev sentence's), 3 and 6 copies
    assert about["by_file"] == {"/data/a.xml": 4, "/data/b.xml": 2} and about["copies"] == 2


def test_a_transfer_set_needs_a_teacher(small_glove: Path, tmp_path: Path) -> None:
    preset = tiny_preset("atae-lstm", small_glove)
    transfer = as_candidates(synthetic_examples(1, seed=0))
    with pytest.raises(ValueError, match="needs a teacher"):
        fit(synthetic_examples(4), None, preset, tmp_path, progress=False, transfer=transfer)


# --------------------------------------------------------------------------- the CLI


def test_cli_transfer_drops_excluded_sentences_and_records_the_file(
    liar: Path, small_glove: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_examples(tmp_path / "train.jsonl", synthetic_examples(12, seed=7))
    test = write_examples(tmp_path / "test.jsonl", synthetic_examples(1, seed=0))  # 1 sentence
    transfer = tmp_path / "transfer.jsonl"
    write_jsonl(transfer, as_candidates(synthetic_examples(3, seed=0)))  # 3 sentences, 6 aspects
    cfg = {
        "preset": "atae-lstm",
        "model": {"hidden_size": 8, "attention_dim": 8, "dropout": 0.0},
        "train": {"glove": str(small_glove), "glove_top_k": 0, "epochs": 1, "teacher": str(liar)},
    }
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    argv = ["train", "--train", str(train), "--config", str(tmp_path / "c.json"), "--quiet"]
    argv += ["--exclude", str(test), "--transfer", str(transfer), "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    info = read_info(tmp_path / "run")
    assert info["data"]["transfer_excluded"] == 2
    assert info["data"]["transfer"][0]["path"] == str(transfer)
    assert info["transfer"]["given"] == 4


def test_cli_transfer_errors_are_one_line(
    small_glove: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_examples(tmp_path / "train.jsonl", synthetic_examples(4))
    bad = tmp_path / "transfer.jsonl"
    bad.write_text('{"text": "the food was good", "start": 4, "end": 8}\n{"text": 3}\n')
    argv = ["train", "--train", str(train), "--transfer", str(bad), "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    assert "--transfer needs a teacher" in capsys.readouterr().err
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"preset": "atae-lstm", "train": {"teacher": "some-run"}}))
    assert main([*argv, "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"absa train: error: {bad}:2: 'text' must be a non-empty string", err
    assert main([*argv, "--task", "category"]) == 2
    assert "--transfer is for --task terms" in capsys.readouterr().err
