"""The training commands of the ``absa`` CLI (absa/cli/train.py) in-process: train,
evaluate (any reader format), export, presets; errors and configs."""

from __future__ import annotations

import csv
import json
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from absa.cli import main
from absa.model import artifact
from absa.training.records import Example
from absa.training.rundir import read_info, read_metrics
from tests.helpers import (
    bracket_leak,
    data_dir,
    synthetic_examples,
    tiny_config,
    write_3line,
    write_jsonl,
)

EXAMPLES = synthetic_examples(12, seed=0)  # the set the session's tiny_run was trained on


def write_csv(path: Path, examples: list[Example]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "aspect", "label"])  # no offsets: the reader finds the aspect
        for e in examples:
            w.writerow([e.text, e.term, e.label])
    return path


def evaluate_json(capsys: pytest.CaptureFixture[str], model: Path, *data: Path) -> dict:
    capsys.readouterr()
    code = main(["evaluate", "--model", str(model), "--data", *map(str, data), "--json"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


# --------------------------------------------------------------------------- train


def test_train_writes_a_run(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    held = write_jsonl(tmp_path / "held.jsonl", EXAMPLES[:6])
    out = tmp_path / "run"
    code = main(
        [
            "train",
            "--train",
            str(train),
            "--dev",
            str(train),
            "--config",
            str(tiny_config(tmp_path / "c.json", small_glove)),
            "--out",
            str(out),
            "--eval",
            str(held),
            "--epochs",
            "3",
            "--seed",
            "5",
            "--quiet",
        ]
    )
    assert code == 0
    assert f"run written to {out}" in capsys.readouterr().out
    assert (out / "run.json").is_file() and (out / "weights.safetensors").is_file()
    info = json.loads((out / "run.json").read_text())
    assert info["seed"] == 5 and info["n_train"] == info["n_dev"] == len(EXAMPLES)
    assert info["data"]["train"][0]["path"] == str(train)
    assert len(info["data"]["train"][0]["sha256"]) == 64
    assert info["data"]["skipped_invalid"] == 0
    tcfg = json.loads((out / "train_config.json").read_text())
    assert tcfg["epochs"] == 3 and tcfg["seed"] == 5 and tcfg["threads"] == 1
    assert len(json.loads((out / "history.json").read_text())) == 3
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["eval"][str(held)]["n"] == 6
    assert metrics["eval"][str(held)]["file"]["sha256"] == info_sha(held)  # which bytes
    assert metrics["eval"][str(held)]["skipped_invalid"] == 0
    assert info["data"]["skipped_invalid_dev"] == 0
    assert list(metrics) == ["dev", "best_epoch", "select_on", "eval"]


def info_sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_train_without_eval_records_none(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    assert main(["train", "--train", str(train), "--config", str(cfg), "--out", str(out)]) == 0
    assert "eval" not in read_metrics(out)


def test_train_dev_seed_keeps_another_seeds_split(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, dev_fraction=0.3)
    base = ["train", "--train", str(train), "--config", str(cfg), "--quiet"]
    assert main([*base, "--seed", "1", "--out", str(tmp_path / "s1")]) == 0
    assert main([*base, "--seed", "2", "--out", str(tmp_path / "s2")]) == 0
    assert main([*base, "--seed", "2", "--dev-seed", "1", "--out", str(tmp_path / "d1")]) == 0
    devs = {
        name: json.loads((tmp_path / name / "train_config.json").read_text())["dev_seed"]
        for name in ("s1", "s2", "d1")
    }
    assert devs == {"s1": None, "s2": None, "d1": 1}
    dev_text = {n: (tmp_path / n / "dev.jsonl").read_text() for n in ("s1", "s2", "d1")}
    assert dev_text["d1"] == dev_text["s1"] != dev_text["s2"]
    assert read_info(tmp_path / "d1")["seed"] == 2


def test_train_excludes_sentences_of_other_files(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    test = write_jsonl(tmp_path / "test.jsonl", EXAMPLES[:4])  # two sentences, 2 aspects each
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--dev", str(train), "--config", str(cfg)]
    with caplog.at_level("WARNING", logger="absa"):
        assert main([*argv, "--out", str(out), "--exclude", str(test), "--quiet"]) == 0
    # the --dev file's 4 are dropped at the last look: the same spelling, not "brackets spelt
    # the other way", which the message said of them
    assert "dropped 4 --dev example(s) whose sentence is in an --exclude file" in caplog.text
    assert "spelt the other way" not in caplog.text
    info = read_info(out)
    assert info["data"]["excluded_overlap"] == 4 and info["n_train"] == len(EXAMPLES) - 4
    assert info["data"]["exclude"][0]["path"] == str(test)


def test_resume_refuses_a_folder_that_is_not_a_run_and_a_file_is_named_as_one(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resume into a folder of other files (the data's own, here the --dev file itself)
    found no checkpoint, trained from epoch 1 and wrote over them: dev.jsonl and metrics.json
    were the user's. And --out naming a file said "or go on with --resume", which then
    failed with "[Errno 17] File exists"."""
    folder = tmp_path / "data"
    folder.mkdir()
    train = write_jsonl(folder / "train.jsonl", EXAMPLES)
    dev = write_jsonl(folder / "dev.jsonl", EXAMPLES[:4])
    (folder / "metrics.json").write_text("{}")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    argv = ["train", "--train", str(train), "--dev", str(dev), "--config", str(cfg), "--quiet"]
    capsys.readouterr()
    assert main([*argv, "--out", str(folder), "--resume"]) == 2
    err = capsys.readouterr().err
    assert f"{folder} holds files that are not a training run's (train.jsonl" in err, err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    for resume in ([], ["--resume"]):
        assert main([*argv, "--out", str(train), *resume]) == 2
        err = capsys.readouterr().err
        assert f"{train} is a file; train into a new directory" in err and "--resume" not in err
    # a run's own folder, stopped before its first checkpoint, still goes on
    run = tmp_path / "run"
    run.mkdir()
    (run / "weights.safetensors").write_bytes(b"")
    assert main([*argv, "--out", str(run), "--resume"]) == 0


def test_a_training_set_that_exclude_empties_is_refused(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--exclude naming the training file itself (or a test file that holds all of it) left
    no training example: a network was "trained" on nothing (loss 0.0000), exit 0 and "run
    written". Now exit 2 before any training, nothing written."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_examples(6, seed=9))
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--dev", str(dev), "--exclude", str(train)]
    capsys.readouterr()
    assert main([*argv, "--config", str(cfg), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "every training sentence is in an --exclude file: nothing left to train on" in err
    assert not out.exists()


@pytest.mark.parametrize("more", [False, True])
def test_a_test_sentence_with_brackets_spelt_otherwise_is_excluded(
    tmp_path: Path, small_glove: Path, more: bool
) -> None:
    """Rest14's test file writes "(" as -LRB-, MAMS train writes "(": normalise_text kept the
    "lrb", and one Rest14 test sentence (2 aspects) was trained on (1.8.0). The first look
    compares by bracket_free, before any split."""
    leak, test = bracket_leak(tmp_path)
    train = write_jsonl(tmp_path / "train.jsonl", [*EXAMPLES, *leak])
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, dev_fraction=0.3)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--exclude", str(test), "--config", str(cfg)]
    argv += ["--train-more", str(train), "--dev-from-train"] if more else []
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    info = read_info(out)
    assert info["data"]["sentence_key"] == "bracket_free"
    assert info["data"]["excluded_overlap"] == (4 if more else 2)  # --train-more: train again
    assert info["data"]["excluded_bracket_forms"] == {"train": 0, "dev": 0, "transfer": 0}
    assert info["n_train"] + info["n_dev"] == len(EXAMPLES)
    assert "100/person" not in (out / "dev.jsonl").read_text()


def test_a_teacher_and_its_students_hold_out_one_dev_split(
    tmp_path: Path, small_glove: Path
) -> None:
    """A teacher (plain --exclude) and its students (--train-more --dev-from-train, the same
    seed) must hold out the same dev split, a bracket-spelt test sentence in --train or not:
    when the teacher dropped it before its split and the students after theirs, the two
    splits were shuffled apart and the students' dev was the teacher's training data."""
    leak, test = bracket_leak(tmp_path)
    examples = synthetic_examples(40, seed=5)
    train = write_jsonl(tmp_path / "train.jsonl", [*examples[:20], *leak, *examples[20:]])
    more = write_jsonl(tmp_path / "more.jsonl", synthetic_examples(12, seed=6))
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, dev_fraction=0.3)
    argv = ["train", "--train", str(train), "--exclude", str(test), "--config", str(cfg)]
    argv += ["--seed", "1", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "teacher")]) == 0
    student = ["--train-more", str(more), "--dev-from-train", "--out", str(tmp_path / "student")]
    assert main([*argv, *student]) == 0
    devs = [(tmp_path / run / "dev.jsonl").read_text() for run in ("teacher", "student")]
    assert devs[0] == devs[1] and "100/person" not in devs[0]


@pytest.mark.parametrize("more", [False, True])
def test_an_exclude_file_that_gives_no_sentence_is_refused(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str], more: bool
) -> None:
    """A file the reader cannot parse (here a category file for --task terms) was read with
    skip_invalid: every record skipped, nothing excluded, and training went on."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    test = tmp_path / "test.categories.jsonl"
    rows = [{"text": e.text, "category": "food", "label": e.label} for e in EXAMPLES[:4]]
    test.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    argv = ["train", "--train", str(train), "--exclude", str(train), str(test)]
    argv += ["--train-more", str(train)] if more else []
    capsys.readouterr()
    code = main([*argv, "--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "run").exists()
    assert f"--exclude {test}: no sentence to exclude read from it as --task terms data" in err
    assert "4 invalid record(s); first: " in err and len(err.strip().splitlines()) == 1


def _xml(path: Path, examples: list[Example]) -> Path:
    """SemEval-2014 XML, one <sentence> per example (its own id)."""
    from xml.sax.saxutils import quoteattr

    rows = [
        f'<sentence id="{i}"><text>{e.text}</text><aspectTerms><aspectTerm term='
        f'{quoteattr(e.term)} polarity="{e.label}" from="{e.start}" to="{e.end}"/>'
        "</aspectTerms></sentence>"
        for i, e in enumerate(examples)
    ]
    path.write_text("<sentences>" + "".join(rows) + "</sentences>\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "3line", "xml"])
@pytest.mark.parametrize("more", [False, True])
def test_the_sentence_of_an_invalid_exclude_record_is_excluded_all_the_same(
    tmp_path: Path, small_glove: Path, caplog: pytest.LogCaptureFixture, fmt: str, more: bool
) -> None:
    """A test file's record the reader passes over (a label it does not know) still names a
    test sentence: it was trained on, since only the valid records' sentences were excluded."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    bad = replace(EXAMPLES[4], label="great")  # the 3rd sentence: EXAMPLES[4:6]
    test = [EXAMPLES[0], bad]
    path = tmp_path / f"test.{fmt}"
    {"jsonl": write_jsonl, "3line": write_3line, "xml": _xml}[fmt](path, test)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--dev", str(train), "--config", str(cfg)]
    argv += ["--train-more", str(train)] if more else []
    with caplog.at_level("WARNING"):
        assert main([*argv, "--out", str(out), "--exclude", str(path), "--quiet"]) == 0
    info = read_info(out)
    assert info["n_train"] == len(EXAMPLES) - 4, info["data"]
    assert f"{path}" in caplog.text and "excluded all the same" in caplog.text


def test_train_more_takes_each_sentence_from_one_file(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[:8])
    test = write_jsonl(tmp_path / "test.jsonl", EXAMPLES[:2])  # one sentence, 2 aspects
    # another set in Title Case with Negative/Positive: 2 sentences the first file has
    # (4 aspects), then 2 sentences of its own (4 aspects)
    cased = [replace(e, text=e.text.title(), label=e.label.title()) for e in EXAMPLES[4:12]]
    more = write_3line(tmp_path / "more.raw", cased)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--train-more", str(more), "--config", str(cfg)]
    assert main([*argv, "--exclude", str(test), "--out", str(out), "--quiet"]) == 0
    info = read_info(out)
    assert info["n_train"] + info["n_dev"] == 6 + 4
    assert info["data"]["excluded_overlap"] == 2
    first, second = info["data"]["combined"]
    assert (first["name"], first["test_overlap"], first["kept"]) == ("--train", 2, 6)
    assert (second["seen_before"], second["same_example"], second["kept"]) == (4, 4, 4)
    assert info["data"]["train_more"][0]["path"] == str(more)


def test_train_more_records_each_files_skipped_records(tmp_path: Path, small_glove: Path) -> None:
    """--skip-invalid over --train-more files: run.json says how many each file lost (it was
    only logged)."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[:8])
    more = write_jsonl(tmp_path / "more.jsonl", EXAMPLES[8:12])
    with more.open("a") as f:
        f.write(json.dumps({"text": "the food was fine", "aspect": "wine", "label": "neutral"}))
        f.write("\n{not json\n")
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    argv = ["train", "--train", str(train), "--train-more", str(more), str(more)]
    argv += ["--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet", "--skip-invalid"]
    assert main(argv) == 0
    data = read_info(tmp_path / "run")["data"]
    assert (data["skipped_invalid"], data["skipped_invalid_more"]) == (0, [2, 2])


@pytest.mark.skipif(not (data_dir() / "semeval15").is_dir(), reason="benchmark data absent")
def test_train_more_reports_name_files_as_run_json_does(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a file beside the checkout, given by its absolute path, is named relative to the
    # checkout in every record of run.json, the per-file reports of the union included
    more = (data_dir() / "semeval15" / "restaurant_train.raw").resolve()
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, augment=0)
    argv = ["train", "--train", str(train), "--train-more", str(more), "--config", str(cfg)]
    assert main([*argv, "--out", str(tmp_path / "run"), "--quiet"]) == 0
    info = read_info(tmp_path / "run")
    named = info["data"]["train_more"][0]["path"]
    assert not Path(named).is_absolute()
    assert info["data"]["combined"][1]["name"] == named


def test_dev_from_train_keeps_the_dev_split_of_a_run_without_the_more_files(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    union = synthetic_examples(40, seed=3)
    train = write_jsonl(tmp_path / "train.jsonl", union[:30])
    test = write_jsonl(tmp_path / "test.jsonl", union[:2])
    more = write_jsonl(tmp_path / "more.jsonl", union[30:])
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, augment=0)
    common = ["train", "--train", str(train), "--exclude", str(test), "--config", str(cfg)]
    assert main([*common, "--out", str(tmp_path / "plain"), "--quiet"]) == 0
    argv = [*common, "--train-more", str(more), "--dev-from-train", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "more")]) == 0
    plain, grown = read_info(tmp_path / "plain"), read_info(tmp_path / "more")
    dev = (tmp_path / "plain" / "dev.jsonl").read_text()
    assert dev and (tmp_path / "more" / "dev.jsonl").read_text() == dev
    assert (
        grown["n_dev"] == plain["n_dev"] and grown["n_train"] == plain["n_train"] + len(union) - 30
    )
    assert grown["dev_split"] == "10% of --train (not --train-more) held out with seed 1"
    # without it, the dev split is drawn from every file
    assert main([*argv[:-2], "--quiet", "--out", str(tmp_path / "all")]) == 0
    assert read_info(tmp_path / "all")["dev_split"] == "10% of train held out with seed 1"
    # it needs --train-more, and no --dev
    assert main([*common, "--dev-from-train", "--out", str(tmp_path / "x")]) != 0
    assert "--dev-from-train is for --train-more without --dev" in capsys.readouterr().err


def test_resume_refuses_a_word_vector_file_changed_at_the_same_path(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GloVe file given by path and replaced between sessions (same path, other vectors)
    was resumed: the network's rows came from the old file, vocab.json and run.json's sha256
    from the new one, and the run matched neither. Refused as other data changes are."""
    vectors = tmp_path / "vectors.txt"
    shutil.copy(small_glove, vectors)
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", vectors, epochs=2)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--config", str(cfg), "--out", str(out), "--quiet"]
    assert main([*argv, "--stop-after", "0"]) == 75
    lines = vectors.read_text(encoding="utf-8").splitlines()
    first = lines[0].split()
    lines[0] = " ".join([first[0], *(f"{float(x) + 0.5:.4f}" for x in first[1:])])
    vectors.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 2
    assert "was written by a run with another configuration or data set" in capsys.readouterr().err


def test_a_run_and_its_artifact_give_the_command_that_trains_it_again(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run.json, the artifact's metadata and its card give the `absa train` command of the
    run (less --resume, --stop-after and --quiet: they end a session or go on with one)
    and the `absa export` one: none was recorded. Run again, the command trains the same
    weights and dev scores."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=2)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--config", str(cfg), "--seed", "4", "--out", str(out)]
    assert main([*argv, "--quiet", "--stop-after", "0"]) == 75
    assert main([*argv, "--quiet", "--resume"]) == 0
    command = read_info(out).get("reproduce")
    expected = ["absa", "train", "--train", str(train), "--task", "terms", "--config", str(cfg)]
    assert command == shlex.join([*expected, "--out", str(out), "--seed", "4"])
    assert read_info(out)["data"]["config"] == [{"path": str(cfg), "sha256": info_sha(cfg)}]
    first = tmp_path / "first"
    out.rename(first)
    assert main(shlex.split(command)[1:]) == 0
    weights = "weights.safetensors"
    assert info_sha(out / weights) == info_sha(first / weights)
    assert read_metrics(out)["dev"] == read_metrics(first)["dev"]
    art = tmp_path / "art"
    assert main(["export", "--run", str(out), "--out", str(art), "--version", "v1"]) == 0
    meta = artifact.load(art).metadata
    export = shlex.join(["absa", "export", "--run", str(out), "--out", str(art), "--version", "v1"])
    assert meta["reproduce"] == f"{command}\n{export}"
    card = (art / "README.md").read_text(encoding="utf-8")
    assert "## Reproduce" in card and f"```bash\n{command}\n{export}\n```" in card


def test_a_run_begun_outside_the_checkout_gives_a_command_that_runs_from_anywhere(
    tmp_path: Path,
    small_glove: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command run elsewhere than the checkout's root named its relative paths as given
    and its absolute ones relative to the checkout: run again, from anywhere, it found
    neither. It now says where it ran (a cd), and names its files as given there."""
    (tmp_path / "work").mkdir()
    write_jsonl(tmp_path / "work" / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    monkeypatch.chdir(tmp_path / "work")
    argv = ["train", "--train", "train.jsonl", "--config", str(cfg), "--out", "run"]
    assert main([*argv, "--quiet"]) == 0
    command = read_info(tmp_path / "work" / "run")["reproduce"]
    cd, rest = command.split(" && ", 1)
    assert cd == f"cd {shlex.quote(str((tmp_path / 'work').resolve()))}"
    assert rest.startswith("absa train --train train.jsonl ") and f"--config {cfg}" in rest
    (tmp_path / "work" / "run").rename(tmp_path / "first")
    monkeypatch.chdir(tmp_path)  # elsewhere: the cd takes it back
    monkeypatch.chdir(shlex.split(cd)[1])
    assert main(shlex.split(rest)[1:]) == 0
    weights = "weights.safetensors"
    assert info_sha(tmp_path / "work" / "run" / weights) == info_sha(tmp_path / "first" / weights)


def test_the_card_names_every_file_the_run_read_and_its_vocabulary(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The card's training data listed --train, --dev and --exclude files, not --train-more
    ones nor the word vectors; it said every word not seen in training reads as the unknown
    word, where the vocabulary has the vectors' most frequent words too."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    more = write_jsonl(tmp_path / "more.jsonl", synthetic_examples(6, seed=9))
    held = write_jsonl(tmp_path / "held.jsonl", synthetic_examples(3, seed=5))
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1, glove_top_k=5)
    out, art = tmp_path / "run", tmp_path / "art"
    argv = ["train", "--train", str(train), "--train-more", str(more), "--exclude", str(held)]
    assert main([*argv, "--config", str(cfg), "--out", str(out), "--quiet"]) == 0
    assert main(["export", "--run", str(out), "--out", str(art)]) == 0
    card = (art / "README.md").read_text(encoding="utf-8")
    for role, path in (("train", train), ("train_more", more), ("exclude", held)):
        assert f"  - {role}: `{path}` (sha256 {info_sha(path)[:12]}...)" in card
    assert f"  - vectors: `{small_glove}` (sha256 {info_sha(small_glove)[:12]}...)" in card
    assert f"on the word vectors of `{small_glove}`" in card and "GloVe word vectors" not in card
    size = artifact.load(art).metadata["model_config"]["vocab_size"]
    assert "out of vocabulary: they all read" not in card
    assert (
        f"Its vocabulary is {size} words: those of its training data and the vectors' 5 most "
        "frequent; any other word reads as one unknown word."
    ) in card


def test_train_more_is_for_aspect_terms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    argv = ["train", "--train", str(train), "--train-more", str(train), "--task", "category"]
    assert main([*argv, "--out", str(tmp_path / "run")]) != 0
    assert "absa train: error: --train-more is for --task terms" in capsys.readouterr().err


def test_config_overrides_model_and_train_keys(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = {
        "preset": "atae-gru",
        "model": {"hidden_size": 6, "bidirectional": True, "dropout": 0.0},
        "train": {
            "glove": str(small_glove),
            "glove_top_k": 0,
            "threads": 1,
            "epochs": 1,
            "batch_size": 5,
            "dev_fraction": 0.25,
        },
    }
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    out = tmp_path / "run"
    code = main(
        ["train", "--train", str(train), "--config", str(tmp_path / "c.json"), "--out", str(out)]
    )
    assert code == 0
    mcfg = json.loads((out / "model_config.json").read_text())
    assert mcfg["cell"] == "gru" and mcfg["hidden_size"] == 6 and mcfg["bidirectional"] is True
    assert mcfg["attention"] == "additive"  # the rest comes from the preset
    assert mcfg["embed_dim"] == 50 and mcfg["vocab_size"] > 2  # set from GloVe and the data
    tcfg = json.loads((out / "train_config.json").read_text())
    assert tcfg["batch_size"] == 5 and tcfg["epochs"] == 1 and tcfg["dev_fraction"] == 0.25
    info = json.loads((out / "run.json").read_text())
    assert info["n_dev"] == 6  # 25% of 24, whole sentences


@pytest.mark.parametrize(
    ("suffix", "content", "message"),
    [
        (".json", {"model": {"hidden": 8}}, "unknown model keys ['hidden']"),
        (".json", {"train": {"epoch": 2}}, "unknown train keys ['epoch']"),
        (".json", {"optimizer": "sgd"}, "unknown top-level keys ['optimizer']"),
        (".toml", "[train]\nlearning_rate = 0.1\n", "unknown train keys ['learning_rate']"),
        (".json", "{not json", "c.json"),
        (".json", 5, "c.json: a config is a table"),
        (".json", {"model": 5}, "c.json: model is a int, not a table of keys"),
        (".json", {"train": {"epochs": "2"}}, "c.json: train.epochs: input should be a valid"),
        (".json", {"train": {"lr": "0.01"}}, "c.json: train.lr: input should be a valid number"),
        (".json", {"train": {"epochs": True}}, "train.epochs: input should be a valid integer"),
        (".json", {"train": {"epochs": 0}}, "c.json: epochs must be >= 1, not 0"),
        (".json", {"model": {"cell": "rnn"}}, "c.json: model.cell: input should be 'lstm' or"),
        (".toml", b"[train]\nlr = 0.1 # caf\xe9\n", "c.toml"),
    ],
)
def test_config_errors_are_clear(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    suffix: str,
    content: object,
    message: str,
) -> None:
    cfg = tmp_path / f"c{suffix}"
    if isinstance(content, bytes):  # not UTF-8
        cfg.write_bytes(content)
    else:
        cfg.write_text(content if isinstance(content, str) else json.dumps(content))
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[:4])
    out = tmp_path / "run"
    code = main(["train", "--train", str(train), "--config", str(cfg), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("absa train: error: ")
    assert message in err
    assert not out.exists()


def _config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str) -> str:
    """``absa train --config`` of a c.json or c.toml holding ``config``: its one error line,
    checked to come before any training."""
    cfg = tmp_path / ("c.json" if config.lstrip().startswith("{") else "c.toml")
    cfg.write_text(config, encoding="utf-8")
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[:4])
    out = tmp_path / "run"
    code = main(["train", "--train", str(train), "--config", str(cfg), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("absa train: error: ") and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    return err


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"preset": ["fast"]}', "c.json: preset is a list, not the name of a preset"),
        ('{"preset": 5}', "c.json: preset is a number, not the name of a preset"),
        ('{"preset": ""}', "c.json: preset: unknown preset ''; choose one of "),
        ('preset = "nope"\n', "c.toml: preset: unknown preset 'nope'; choose one of "),
        ('{"about": 5, "train": {"epochs": 1}}', "c.json: about is a number, not a text"),
    ],
)
def test_a_config_preset_that_is_not_a_preset_name_is_one_line_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, message: str
) -> None:
    """``{"preset": ["fast"]}`` ended in a TypeError traceback (unhashable list); a number,
    or a name no preset has, in a message that named neither the file nor the key; an
    empty name silently trained the default preset (null is the default, as if absent)."""
    assert message in _config_error(tmp_path, capsys, config)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"model": {"labels": []}}', "c.json: labels must be distinct, and at least one"),
        (
            '{"model": {"labels": ["negative", "positive", "negative"]}}',
            "c.json: labels must be distinct, and at least one, not "
            "['negative', 'positive', 'negative']",
        ),
        ('{"train": {"glove_top_k": -1, "epochs": 1}}', "c.json: glove_top_k must be >= 0, not -1"),
    ],
)
def test_config_labels_and_glove_top_k_are_checked_when_the_config_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, message: str
) -> None:
    """Empty or repeated ``model.labels`` failed late, with a KeyError; a negative
    ``train.glove_top_k`` was taken (as ``words[:-1]``: every GloVe word but the last)."""
    assert message in _config_error(tmp_path, capsys, config)


def test_unknown_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[:4])
    code = main(["train", "--train", str(train), "--preset", "nope", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown preset 'nope'" in err and "atae-lstm" in err
    assert len(err.strip().splitlines()) == 1


def test_train_bad_record_names_file_and_line(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    with train.open("a") as f:  # line 25
        f.write(json.dumps({"text": "the food was fine", "aspect": "wine", "label": "neutral"}))
        f.write("\n")
    args = ["train", "--train", str(train), "--config"]
    args += [str(tiny_config(tmp_path / "c.json", small_glove)), "--out"]
    code = main([*args, str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{train}:25" in err and "wine" in err
    assert not (tmp_path / "bad" / "run.json").exists()

    code = main([*args, str(tmp_path / "ok"), "--skip-invalid", "--quiet"])
    assert code == 0
    info = json.loads((tmp_path / "ok" / "run.json").read_text())
    assert info["data"]["skipped_invalid"] == 1
    assert info["n_train"] + info["n_dev"] == len(EXAMPLES)


# --------------------------------------------------------------------------- export


def test_export_prints_parity(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "a"
    argv = ["export", "--run", str(tiny_run), "--out", str(out)]
    assert main([*argv, "--name", "n", "--version", "v9"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"artifact written to {out}: parity on {len(EXAMPLES)} dev items")
    assert "int8" not in printed
    meta = artifact.load(out).metadata
    assert (meta["name"], meta["version"], meta["source_run"]) == ("n", "v9", str(tiny_run))
    t = meta["calibration"]["temperature"]
    assert meta["calibration"]["fitted"] and f"temperature {t:.3f}, dev ECE (15 bins)" in printed


def test_export_no_calibrate(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "raw"
    assert main(["export", "--run", str(tiny_run), "--out", str(out), "--no-calibrate"]) == 0
    printed = capsys.readouterr().out
    # it said "temperature 1.000, dev ECE X -> X", as if a fit had found 1
    assert "not calibrated (--no-calibrate): dev ECE (15 bins) " in printed, printed
    assert "temperature" not in printed and "->" not in printed
    cal = artifact.load(out).metadata["calibration"]
    assert (cal["temperature"], cal["fitted"]) == (1.0, False)


def test_export_refuses_a_top_map_without_the_temperature(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--top-map --no-calibrate said "needs the temperature and at least 500 dev items; the
    dev split has 638", as if 638 were too few: the two flags are what cannot go together."""
    out = tmp_path / "art"
    args = ["export", "--run", str(tiny_run), "--out", str(out), "--top-map", "--no-calibrate"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--top-map" in err and "--no-calibrate" in err and err.count("\n") == 1, err
    assert "dev items" not in err and not out.exists()


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ({"start": 12, "end": 11}, "aspect span [12, 11) ends before it starts"),
        ({"start": 11, "end": 11}, "aspect span [11, 11) is empty"),
        ({"end": 999}, "is outside the text"),
        ({"text": "   "}, "text is empty or only whitespace"),
    ],
)
def test_export_names_the_dev_line_of_a_damaged_span(
    tiny_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: dict,
    says: str,
) -> None:
    """A damaged dev.jsonl span failed export with "aspect span [32, 31) is outside the
    text", naming no file or line, and a reversed span is not outside the text."""
    run = shutil.copytree(tiny_run, tmp_path / "run")
    lines = (run / "dev.jsonl").read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), **damage})
    (run / "dev.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "art"
    assert main(["export", "--run", str(run), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert f"{run / 'dev.jsonl'}:2: " in err and says in err and err.count("\n") == 1, err
    assert not out.exists()


def test_int8_export(tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "int8"
    code = main(["export", "--run", str(tiny_run), "--out", str(out), "--quantize", "int8"])
    assert code == 0
    assert "predictions changed" in capsys.readouterr().out
    assert artifact.load(out).metadata["quantization"]["type"] == "int8-dynamic"


def test_an_int8_export_short_of_disk_space_says_so_in_one_line(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """onnxruntime's quantiser writes a copy of the graph beside it: on a full disk the copy
    was cut short and the export ended in a protobuf traceback ("Wire format was corrupt")."""
    import shutil as sh
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(sh, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, 1000))
    out = tmp_path / "int8"
    code = main(["export", "--run", str(tiny_run), "--out", str(out), "--quantize", "int8"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("absa export: error:"), err
    assert "free" in err and str(tmp_path) in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_export_errors_are_one_line(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--run", str(tmp_path), "--out", str(tmp_path / "a")]) == 2
    assert "absa export: error:" in capsys.readouterr().err
    (tmp_path / "taken").mkdir()
    assert main(["export", "--run", str(tiny_run), "--out", str(tmp_path / "taken")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("absa export: error:") and "exists" in err


def test_an_export_into_its_own_run_is_refused(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out RUN/art` was written into the run directory, which the run's own files and
    any later export or resume then shared."""
    run = shutil.copytree(tiny_run, tmp_path / "run")
    before = sorted(p.name for p in run.iterdir())
    assert main(["export", "--run", str(run), "--out", str(run / "art")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("absa export: error:") and "inside the run" in err, err
    assert sorted(p.name for p in run.iterdir()) == before


def test_export_refuses_a_negative_expand_top_k(
    tiny_run: Path, small_glove: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--expand-top-k -3`` went through as ``words[:-3]``: every word of the file but the
    last three, recorded as top_k -3."""
    argv = ["export", "--run", str(tiny_run), "--out", str(tmp_path / "a")]
    assert main([*argv, "--expand-vocab", str(small_glove), "--expand-top-k", "-3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("absa export: error:") and "--expand-top-k" in err
    assert not (tmp_path / "a").exists()


def _damage_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _without_label(path: Path) -> None:
    row = json.loads(path.read_text(encoding="utf-8").splitlines()[2])
    del row["label"]
    _damage_line(path, 3, json.dumps(row))


def _start_is(value: object) -> str:
    return json.dumps({"text": "the food was good", "start": value, "end": 8, "label": "positive"})


def _label_is(label: str) -> str:
    return json.dumps({"text": "the food was good", "start": 4, "end": 8, "label": label})


#: (a name, the run file damaged, how, what the message names after the file, the commands
#: that read it): each gave a traceback (safetensors' own error, a TypeError) or a message that
#: named no file ("Expecting value: line 1 column 1 (char 0)", "label", "kind")
DAMAGED_RUNS = [
    ("truncated", "weights.safetensors", lambda p: p.write_bytes(p.read_bytes()[:100]), "", "both"),
    ("garbage", "weights.safetensors", lambda p: p.write_bytes(b"garbage" * 20), "", "both"),
    ("empty", "weights.safetensors", lambda p: p.write_bytes(b""), "", "both"),
    ("torn", "weights.safetensors", lambda p: p.write_bytes(p.read_bytes()[:-100]), "", "both"),
    ("bad-json", "dev.jsonl", lambda p: _damage_line(p, 3, "{torn"), ":3: ", "export"),
    ("no-label", "dev.jsonl", _without_label, ":3: ", "export"),
    ("bad-start", "dev.jsonl", lambda p: _damage_line(p, 3, _start_is("3")), ":3: ", "export"),
    ("not-object", "dev.jsonl", lambda p: _damage_line(p, 3, "[1, 2]"), ":3: ", "export"),
    ("garbage", "pipeline.json", lambda p: p.write_text("garbage{"), "", "both"),
    ("list", "pipeline.json", lambda p: p.write_text("[]"), "", "both"),
    ("no-kind", "pipeline.json", lambda p: p.write_text("{}"), "", "both"),
    ("garbage", "vocab.json", lambda p: p.write_text("garbage{"), "", "both"),
    ("garbage", "model_config.json", lambda p: p.write_text("garbage{"), "", "both"),
    ("garbage", "metrics.json", lambda p: p.write_text("garbage{"), "", "both"),
    ("dev-not-object", "metrics.json", lambda p: p.write_text('{"dev": 3}'), "", "export"),
    (
        "conflict",
        "dev.jsonl",
        lambda p: _damage_line(p, 3, _label_is("conflict")),
        ":3: ",
        "export",
    ),
]


@pytest.mark.parametrize(
    ("command", "name", "damage", "where"),
    [
        pytest.param(command, name, damage, where, id=f"{command}-{name}-{how}")
        for how, name, damage, where, commands in DAMAGED_RUNS
        for command in ("export", "evaluate")
        if commands in ("both", command)
    ],
)
def test_a_damaged_run_is_one_line_naming_the_file(
    tiny_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    name: str,
    damage: object,
    where: str,
) -> None:
    run = shutil.copytree(tiny_run, tmp_path / "run")
    damage(run / name)  # type: ignore[operator]
    if command == "export":
        argv = ["export", "--run", str(run), "--out", str(tmp_path / "a")]
    else:
        data = write_jsonl(tmp_path / "d.jsonl", EXAMPLES[:3])
        argv = ["evaluate", "--model", str(run), "--data", str(data)]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(f"absa {command}: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"absa {command}: error: {run / name}{where}"), lines[0]
    assert not (tmp_path / "a").exists()


# --------------------------------------------------------------------------- evaluate


def test_evaluate_json(tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", EXAMPLES)
    rep = evaluate_json(capsys, tiny_run, data)
    assert rep["n"] == len(EXAMPLES)
    assert 0.0 <= rep["macro_f1"] <= 1.0 and 0.0 <= rep["accuracy"] <= 1.0
    assert rep["accuracy"] >= 0.9  # tiny_run fits its own training set
    assert rep["model"] == str(tiny_run) and rep["data"] == [str(data)]
    assert sum(map(sum, rep["confusion"])) == rep["n"]
    assert 0.0 <= rep["ece"] <= 1.0 and rep["ece_bins"] == 15
    assert rep["files"] == [{"path": str(data), "sha256": info_sha(data)}]
    assert rep["skipped_invalid"] == 0 and rep["code_version"]
    # which model, not the path alone (another model sits there tomorrow)
    run_info = json.loads((tiny_run / "run.json").read_text())
    assert rep["model_identity"] == {
        "path": str(tiny_run),
        "kind": "run",
        "weights_sha256": info_sha(tiny_run / "weights.safetensors"),
        "code_version": run_info["code_version"],
    }


def test_evaluate_of_several_files_scores_each_beside_the_pool(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two files gave one pooled score, n the sum, and no word of either file's own."""
    a = write_jsonl(tmp_path / "a.jsonl", EXAMPLES[:10])
    b = write_jsonl(tmp_path / "b.jsonl", EXAMPLES[10:])
    both = evaluate_json(capsys, tiny_run, a, b)
    alone = [evaluate_json(capsys, tiny_run, f) for f in (a, b)]
    assert both["by_group"] == {
        str(f): {k: rep[k] for k in ("n", "accuracy", "macro_f1")}
        for f, rep in zip((a, b), alone, strict=True)
    }
    assert both["n"] == alone[0]["n"] + alone[1]["n"] and "by_group" not in alone[0]


def test_evaluate_names_an_artifact_by_name_version_and_onnx_sha256(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rep = evaluate_json(capsys, artifact, write_jsonl(tmp_path / "d.jsonl", EXAMPLES))
    meta = json.loads((artifact / "metadata.json").read_text())
    assert rep["model_identity"] == {
        "path": str(artifact),
        "kind": "artifact",
        "name": meta["name"],
        "version": meta["version"],
        "onnx_sha256": info_sha(artifact / "model.onnx"),
    }


def test_evaluate_any_reader_format(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = evaluate_json(capsys, tiny_run, write_jsonl(tmp_path / "d.jsonl", EXAMPLES))
    three = evaluate_json(capsys, tiny_run, write_3line(tmp_path / "d.seg", EXAMPLES))
    table = evaluate_json(capsys, tiny_run, write_csv(tmp_path / "d.csv", EXAMPLES))
    for rep in (three, table):
        assert rep["n"] == jsonl["n"]
        assert rep["accuracy"] == jsonl["accuracy"]
        assert rep["confusion"] == jsonl["confusion"]
    both = evaluate_json(capsys, tiny_run, tmp_path / "d.seg", tmp_path / "d.csv")
    assert both["n"] == 2 * len(EXAMPLES)


def test_evaluate_text_report(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", EXAMPLES[:5])
    assert main(["evaluate", "--model", str(tiny_run), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("n=5  accuracy=") and "confusion" in out
    assert "  ECE(15 bins)=" in out.splitlines()[0]
    # a run's ECE and its artifact's differ by export's temperature: each says which it is
    assert out.splitlines()[0].endswith("(calibration: none (a run's network; export fits a "
                                        "temperature on dev))")  # fmt: skip
    from absa.model.runtime import DEFAULT_MODEL_DIR

    t = json.loads((DEFAULT_MODEL_DIR / "metadata.json").read_text())["calibration"]["temperature"]
    assert main(["evaluate", "--data", str(data)]) == 0  # the shipped model
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(f"(calibration: as served: temperature {t:.3g}, and a top-label map)")


def test_evaluate_errors(
    tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", EXAMPLES[:2])
    assert main(["evaluate", "--model", str(tmp_path), "--data", str(data)]) == 2
    assert "neither a training run" in capsys.readouterr().err
    missing = tmp_path / "missing.jsonl"
    assert main(["evaluate", "--model", str(tiny_run), "--data", str(missing)]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


def test_presets_lists_every_preset(capsys: pytest.CaptureFixture[str]) -> None:
    from absa.training.presets import PRESETS

    assert main(["presets"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == list(PRESETS)


def test_no_progress_bars_when_stderr_is_not_a_terminal(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Logs (the retrain CronJob, CI) get no bars even without --quiet (issue #13, item 21)."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=2)
    argv = ["train", "--train", str(train), "--config", str(cfg), "--out", str(tmp_path / "r")]
    assert main(argv) == 0  # no --quiet
    err = capsys.readouterr().err
    assert "epoch 1:" not in err and "it/s" not in err and "\r" not in err, err[-500:]


def test_an_existing_run_directory_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Training into a directory that holds something (a finished run, say) is refused
    before any work; --resume is the way to go on in one."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[:4])
    out = tmp_path / "run"
    out.mkdir()
    (out / "weights.safetensors").write_bytes(b"a finished run's")
    code = main(["train", "--train", str(train), "--preset", "fast", "--out", str(out)])
    assert code == 2
    assert "exists; train into a new directory, or go on with --resume" in capsys.readouterr().err
    assert (out / "weights.safetensors").read_bytes() == b"a finished run's"
    assert [p.name for p in out.iterdir()] == ["weights.safetensors"]


def test_no_valid_examples_is_an_error_not_a_report_of_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--skip-invalid over a file whose every record is bad: evaluate answered n = 0 with
    exit 0; it (and train) now say there is nothing to work on."""
    from absa.model.runtime import DEFAULT_MODEL_DIR

    bad = tmp_path / "bad.csv"
    bad.write_text("text,aspect,label\nThe food is good,pizza,positive\n")
    argv = ["evaluate", "--model", str(DEFAULT_MODEL_DIR), "--data", str(bad), "--skip-invalid"]
    assert main(argv) == 2
    assert "no valid examples in --data (1 invalid, skipped)" in capsys.readouterr().err
    out = tmp_path / "run"
    argv = ["train", "--train", str(bad), "--skip-invalid", "--preset", "fast", "--out", str(out)]
    assert main(argv) == 2
    assert "no valid examples in --train" in capsys.readouterr().err
    assert not out.exists()


def test_resume_on_a_finished_run_and_a_missing_eval_file_are_refused_first(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resume on a finished run trained it again from scratch, with whatever data and seed
    it was given, over the old one; a missing --eval file was found after the training."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--config", str(cfg), "--quiet"]
    code = main([*argv, "--eval", str(tmp_path / "gone.jsonl"), "--out", str(out)])
    assert code == 2 and "gone.jsonl: no such file" in capsys.readouterr().err
    assert not out.exists()  # nothing trained
    assert main([*argv, "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert main([*argv, "--out", str(out), "--resume", "--seed", "7"]) == 2
    err = capsys.readouterr().err
    assert "holds a finished run" in err and f"absa evaluate --model {out} --data FILE" in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    # the very command again (a job restarted after its run was written): nothing to do
    assert main([*argv, "--out", str(out), "--resume"]) == 0
    assert "is finished (this command, these files): nothing to do" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    write_jsonl(train, EXAMPLES[:-1])  # the same command on other bytes: refused as before
    assert main([*argv, "--out", str(out), "--resume"]) == 2
    assert "holds a finished run" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_evaluate_refuses_skip_invalid_for_an_extractor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The extractor's sentence readers stop at the first bad record: the flag did nothing."""
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR

    data = write_jsonl(tmp_path / "d.jsonl", EXAMPLES[:2])
    argv = ["evaluate", "--model", str(DEFAULT_EXTRACTOR_DIR), "--data", str(data)]
    assert main([*argv, "--skip-invalid"]) == 2
    assert "--skip-invalid is for sentiment models" in capsys.readouterr().err


@pytest.mark.parametrize("threads", ["0", "-1"])
def test_threads_below_one_are_refused_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], threads: str
) -> None:
    """torch's "set_num_threads expects a positive integer" came after the data was read and
    --out made, and named no flag."""
    argv = ["train", "--train", str(tmp_path / "missing.jsonl"), "--threads", threads]
    code = main([*argv, "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "run").exists()
    assert err.strip() == f"absa train: error: --threads is at least 1, not {threads}"


@pytest.mark.parametrize("task", ["terms", "extract"])
@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_a_seed_numpy_cannot_take_is_refused_naming_the_flag(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str], seed: str, task: str
) -> None:
    """numpy's "Seed must be between 0 and 2**32 - 1" named no flag, and came after --out
    was made (an empty run directory left behind)."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    config = ["--config", str(tiny_config(tmp_path / "c.json", small_glove))]
    out = tmp_path / "run"
    argv = ["train", "--task", task, "--train", str(train), "--seed", seed, "--out", str(out)]
    code = main([*argv, *(config if task == "terms" else []), "--epochs", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.strip() == f"absa train: error: --seed is from 0 to 4294967295, not {seed}"


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--dev-seed", "-1", "--dev-seed is from 0 to 4294967295, not -1"),
    ("--epochs", "0", "--epochs is at least 1, not 0"),
])  # fmt: skip
def test_a_dev_seed_or_epochs_out_of_range_is_named_as_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, said: str
) -> None:
    """They were "dev_seed is from 0 to ..." and "epochs must be >= 1": the config's keys,
    where --seed and --threads were named as flags."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    argv = ["train", "--train", str(train), flag, value, "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"absa train: error: {said}"


@pytest.mark.parametrize("key", ["seed", "dev_seed"])
def test_a_seed_numpy_cannot_take_in_a_config_file_is_refused_naming_the_file(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    """``train.seed = -1`` in a --config file came to numpy as the flag did: its words,
    naming neither the file nor the key, after --out was made."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    config = tiny_config(tmp_path / "c.json", small_glove, **{key: -1})
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--config", str(config), "--out", str(out)]
    assert main([*argv, "--quiet"]) == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"absa train: error: {config}: ") and err.endswith(
        f"{key} is from 0 to 4294967295, not -1"
    ), err


@pytest.mark.parametrize("flag", ["--dev", "--eval", "--train-more"])
def test_a_dev_or_eval_file_whose_every_record_is_skipped_is_refused(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    """With --skip-invalid, a --dev file of bad records gave dev = [] and the run held 10% of
    --train out instead, without a word; an --eval file gave a report of n = 0, accuracy 0,
    after the training (absa evaluate refuses both); a --train-more file added nothing."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    bad = tmp_path / "bad.csv"
    bad.write_text("text,aspect,label\nThe food is good,pizza,positive\n")
    out = tmp_path / "run"
    argv = [
        "train",
        "--train",
        str(train),
        "--config",
        str(tiny_config(tmp_path / "c.json", small_glove)),
    ]
    code = main([*argv, flag, str(bad), "--skip-invalid", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"no valid examples in {flag} {bad} (1 invalid, skipped)" in err
    assert not out.exists()  # refused before training


def test_a_file_given_twice_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`absa evaluate --data f f` counted every aspect twice (n doubled, no word of it), and
    `--train f f` trained on each twice; a second name for the same file too."""
    data = write_jsonl(tmp_path / "d.jsonl", EXAMPLES)
    (tmp_path / "link.jsonl").symlink_to(data)
    for argv in (
        ["evaluate", "--data", str(data), str(data)],
        ["evaluate", "--data", str(data), str(tmp_path / "link.jsonl")],
        ["train", "--train", str(data), str(data), "--out", str(tmp_path / "run")],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "given twice" in err and str(data) in err and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()


def test_a_dev_file_that_is_also_training_data_is_warned_of(
    tmp_path: Path, small_glove: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`--train f --dev f` trained and reported a dev accuracy of 100 without a word: the
    dev score was on the training data."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    argv = ["train", "--train", str(train), "--dev", str(train), "--config", str(cfg)]
    with caplog.at_level("WARNING"):
        assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("--dev" in w and "training data" in w and str(train) in w for w in warned), warned


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty directory on a read-only file system (a tmpfs mounted ro); skipped where this
    process cannot mount (not root, or no CAP_SYS_ADMIN), as root ignores mode bits."""
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    up = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ro)], check=False)
    if up.returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (ro / "run").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        yield ro / "run"
    finally:
        subprocess.run(["umount", str(ro)], check=False)


def test_a_read_only_out_is_refused_before_training_and_not_as_a_retry(
    tmp_path: Path, small_glove: Path, read_only_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An --out on a read-only file system trained a whole epoch, then failed writing the
    weights as an I/O error, exit 75 ("may succeed if run again"), which it would not."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    argv = ["train", "--train", str(train), "--dev", str(train), "--config", str(cfg)]
    capsys.readouterr()
    assert main([*argv, "--out", str(read_only_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {read_only_dir}: Read-only file system" in err, err
    assert "epoch 1" not in err


@pytest.mark.parametrize("task", ["terms", "extract"])
def test_a_config_that_is_missing_or_a_folder_is_named_as_the_config(
    task: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--config missing.json` said "[Errno 2] No such file or directory: 'missing.json'",
    a folder "[Errno 21] Is a directory", naming no flag."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[:4])
    (tmp_path / "adir").mkdir()
    argv = ["train", "--task", task, "--train", str(train), "--out", str(tmp_path / "run")]
    for cfg, said in (
        ("missing.json", "no such file"),
        ("adir", "is a directory, not a config file"),
    ):
        assert main([*argv, "--config", str(tmp_path / cfg)]) == 2
        err = capsys.readouterr().err
        assert err == f"absa train: error: --config {tmp_path / cfg}: {said}\n", err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("resume", [False, True])
def test_a_second_train_into_an_out_another_is_writing_into_is_refused(
    resume: bool, tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `absa train` runs into one --out both passed the "exists" check (the directory
    stays empty until the first checkpoint), both trained, and the last writer won, exit 0
    for both; --resume as well. The run claims --out (flock on the directory) for the whole
    command: a second one is refused at once; the claim ends with the command."""
    import fcntl
    import os

    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--config", str(cfg), "--out", str(out), "--quiet"]
    argv += ["--resume"] if resume else []
    out.mkdir()  # as the first run's fit() makes it, empty till its first checkpoint
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)  # the first run's claim
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == (
            f"absa train: error: {out}: another absa train is writing into it; "
            "train into another directory\n"
        ), err
        assert list(out.iterdir()) == []
    finally:
        os.close(fd)
    assert main(argv) == 0  # the first one gone: its claim is too
    assert (out / "run.json").is_file()
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)  # not held after the command
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    assert not list(out.glob("*lock*"))


def test_a_refused_train_leaves_no_out_directory_behind(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The claim on --out makes the directory; a run refused before it trains removes it
    again (and the parents it made), so the same command, put right, is not refused."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "new" / "run"
    argv = ["train", "--train", str(train), "--config", str(cfg), "--out", str(out), "--quiet"]
    assert main([*argv, "--eval", str(tmp_path / "gone.jsonl")]) == 2
    assert "gone.jsonl: no such file" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    assert main(argv) == 0


def test_dev_and_eval_sentences_that_are_training_or_dev_data_are_warned_of_and_counted(
    tmp_path: Path, small_glove: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """--dev was checked against --train by file identity alone (a copy, or a file sharing
    sentences, passed), --eval not at all; retrain checks its eval sets by sentence. Each is
    now compared by sentence (bracket_free, as --exclude compares): --dev and each --eval
    with the training data, an --eval with --dev too; warned of, counted in run.json's data
    and in metrics.json's eval entry, not refused."""
    known = {e.text for e in EXAMPLES}
    fresh = [e for e in synthetic_examples(40, seed=9) if e.text not in known]
    fresh_texts = list(dict.fromkeys(e.text for e in fresh))
    unseen = [e for e in fresh if e.text in fresh_texts[:3]]  # 3 sentences in no other file
    other = [e for e in fresh if e.text in fresh_texts[3:5]]  # 2 more
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES[4:])  # sentences 2 to 11
    dev = write_jsonl(tmp_path / "dev.jsonl", [*EXAMPLES[4:8], *unseen])  # 2 trained + 3
    # one training sentence (not in dev), one dev sentence (not trained on), two in neither
    held = write_jsonl(tmp_path / "held.jsonl", [*EXAMPLES[8:10], *unseen[:2], *other])
    clean = write_jsonl(tmp_path / "clean.jsonl", other)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--dev", str(dev), "--config", str(cfg), "--quiet"]
    with caplog.at_level("WARNING"):
        assert main([*argv, "--eval", str(held), str(clean), "--out", str(out)]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(
        f"--dev {dev}: 2 of its 5 sentences are also in the training data" in w for w in warned
    ), warned
    assert any(
        f"--eval {held}: 1 of its 4 sentences are also in the training data" in w for w in warned
    ), warned
    assert any(f"--eval {held}: 1 of its 4 sentences are also in --dev" in w for w in warned)
    assert not any(str(clean) in w for w in warned), warned
    data = read_info(out)["data"]
    assert data["dev_overlap"] == {"train": {"sentences": 2, "of": 5}}
    assert data["eval_overlap"] == {
        str(held): {"train": {"sentences": 1, "of": 4}, "dev": {"sentences": 1, "of": 4}},
        str(clean): {"train": {"sentences": 0, "of": 2}, "dev": {"sentences": 0, "of": 2}},
    }
    evals = read_metrics(out)["eval"]
    assert evals[str(held)]["overlap"] == data["eval_overlap"][str(held)]
    assert evals[str(clean)]["overlap"] == data["eval_overlap"][str(clean)]


def test_an_eval_file_that_is_training_data_is_warned_of_without_a_dev_file(
    tmp_path: Path, small_glove: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Without --dev the held-out split is training data's: an --eval is compared with all
    of --train (no --dev to compare it with)."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    out = tmp_path / "run"
    argv = ["train", "--train", str(train), "--eval", str(train), "--config", str(cfg)]
    with caplog.at_level("WARNING"):
        assert main([*argv, "--out", str(out), "--quiet"]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    said = f"--eval {train}: 12 of its 12 sentences are also in the training data"
    assert any(said in w for w in warned), warned
    data = read_info(out)["data"]
    assert "dev_overlap" not in data
    assert data["eval_overlap"] == {str(train): {"train": {"sentences": 12, "of": 12}}}


def test_training_data_that_lacks_a_label_is_warned_of(
    tmp_path: Path, small_glove: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 3-class model trained on data with no neutral example without a word (run.json's
    label_counts said neutral 0; retrain refuses such data): a warning names the label."""
    train = write_jsonl(tmp_path / "train.jsonl", [e for e in EXAMPLES if e.label != "neutral"])
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    argv = ["train", "--train", str(train), "--config", str(cfg), "--quiet"]
    with caplog.at_level("WARNING"):
        assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    said = "the training data has no 'neutral' examples"
    assert [w for w in warned if said in w and "never" in w], warned
    assert read_info(tmp_path / "run")["label_counts"]["neutral"] == 0
    caplog.clear()
    with caplog.at_level("WARNING"):  # every label there: no word of one
        assert main([*argv[:2], str(write_jsonl(tmp_path / "all.jsonl", EXAMPLES)), *argv[3:],
                     "--out", str(tmp_path / "all")]) == 0  # fmt: skip
    assert not [r for r in caplog.records if "has no" in r.getMessage()]


def test_a_dev_set_of_one_label_is_warned_of(
    tmp_path: Path, small_glove: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A dev set of one class reported 100 % macro-F1 and epochs were selected on it, without
    a word: a warning names the label and the --dev file, or the held-out split."""
    train = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    dev = write_jsonl(tmp_path / "dev.jsonl", [e for e in EXAMPLES if e.label == "positive"])
    cfg = tiny_config(tmp_path / "c.json", small_glove, epochs=1)
    argv = ["train", "--train", str(train), "--config", str(cfg), "--quiet"]
    with caplog.at_level("WARNING"):
        assert main([*argv, "--dev", str(dev), "--out", str(tmp_path / "run")]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    said = f"--dev {dev}: the dev set holds one label only ('positive')"
    assert [w for w in warned if said in w and "macro-F1" in w], warned
    # one unpaired sentence held out: one example, one label
    one = write_jsonl(tmp_path / "one.jsonl", synthetic_examples(12, seed=0, paired=False))
    cfg = tiny_config(tmp_path / "c5.json", small_glove, epochs=1, dev_fraction=0.05)
    caplog.clear()
    argv = ["train", "--train", str(one), "--config", str(cfg), "--quiet"]
    with caplog.at_level("WARNING"):
        assert main([*argv, "--out", str(tmp_path / "split")]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [w for w in warned if "the held-out split: the dev set holds one label only" in w]
    caplog.clear()
    with caplog.at_level("WARNING"):  # dev of every label: no word of it
        assert main([*argv[:2], str(train), *argv[3:4], str(tiny_config(tmp_path / "c1.json",
                     small_glove, epochs=1)), "--dev", str(train), "--out",
                     str(tmp_path / "mixed")]) == 0  # fmt: skip
    assert not [r for r in caplog.records if "one label only" in r.getMessage()]
