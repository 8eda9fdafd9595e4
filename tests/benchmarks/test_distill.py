"""benchmarks/distill.py end to end on a tiny stand-in for the four data sets: the student of
another seed keeps its teacher's dev split, the result file says so, and a rerun skips it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import pytest

from absa.cli import main as absa
from absa.training.records import Example
from absa.training.rundir import read_dev_examples
from benchmarks import default_model, distill
from benchmarks.datasets import DATASETS
from tests.helpers import synthetic_examples, tiny_config, write_3line


def write_xml(path: Path, examples: list[Example]) -> None:
    by_text: dict[str, list[Example]] = {}
    for e in examples:
        by_text.setdefault(e.text, []).append(e)
    rows = ["<sentences>"]
    for i, (text, es) in enumerate(by_text.items()):
        terms = "".join(
            f"<aspectTerm term={quoteattr(e.term)} polarity={quoteattr(e.label)} "
            f'from="{e.start}" to="{e.end}"/>'
            for e in es
        )
        rows.append(f'<sentence id="{i}"><text>{escape(text)}</text><aspectTerms>{terms}'
                    "</aspectTerms></sentence>")  # fmt: skip
    path.write_text("\n".join([*rows, "</sentences>"]), encoding="utf-8")


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The four sets' files where benchmarks/datasets.py looks, each with its own sentences."""
    root = tmp_path / "data"
    for k, name in enumerate(DATASETS):
        for split, seed, n in (("train", 10 + k, 10), ("test", 20 + k, 3)):
            path = root / DATASETS[name][split]
            path.parent.mkdir(parents=True, exist_ok=True)
            examples = synthetic_examples(n, seed=seed)
            (write_xml if path.suffix == ".xml" else write_3line)(path, examples)
    monkeypatch.setenv("ABSA_DATA_DIR", str(root))
    monkeypatch.setattr(distill, "OUT", tmp_path / "results")
    monkeypatch.setattr(distill, "RUNS", tmp_path / "runs")
    return root


def test_students_keep_the_teachers_split_and_rerun_skips(
    data: Path, small_glove: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    teacher = tmp_path / "teacher"
    trains = [str(data / DATASETS[d]["train"]) for d in DATASETS]
    tests = [str(data / DATASETS[d]["test"]) for d in DATASETS]
    cmd = ["train", "--train", *trains, "--exclude", *tests, "--seed", "1", "--quiet"]
    cmd += ["--config", str(tiny_config(tmp_path / "t.json", small_glove, epochs=1))]
    assert absa([*cmd, "--out", str(teacher)]) == 0
    student = tiny_config(
        tmp_path / "s.json", small_glove, epochs=1, teacher=str(teacher), distill=0.5
    )
    argv = ["distill.py", "--name", "tiny", "--config", str(student), "--seeds", "2"]
    monkeypatch.setattr(sys, "argv", argv)
    distill.main()

    result_path = tmp_path / "results" / "tiny.s2.json"
    result = json.loads(result_path.read_text())
    assert result["seed"] == 2 and result["dev_seed"] == 1  # the teacher's seed
    assert result["teacher"]["dev_leak"] == 0
    assert set(result["test"]) == set(DATASETS) == set(result["teacher_test"])
    assert all(r["n"] == 6 for r in result["test"].values())  # 3 sentences, 2 aspects each
    assert any("--seed 2 --dev-seed 1" in c for c in result["commands"])
    dev = {e.text for e in read_dev_examples(tmp_path / "runs" / "tiny.s2")}
    assert dev == {e.text for e in read_dev_examples(teacher)}
    (recorded,) = (tmp_path / "results").glob("teacher-teacher-*.json")
    teacher_file = json.loads(recorded.read_text())
    assert recorded.name == f"teacher-teacher-{teacher_file['sha256'][:8]}.json"
    assert teacher_file["test"] == result["teacher_test"] and teacher_file["seed"] == 1
    # the teacher's scores are read back while its weights are the recorded ones, and
    # measured again when they are not
    planted = {**teacher_file, "test": {d: {"accuracy": 0.5} for d in DATASETS}}
    recorded.write_text(json.dumps(planted))
    tests_by_name = distill.tests()
    again = default_model.teacher_scores(distill.ABSA, teacher, tests_by_name, recorded.parent)
    assert again["test"] == planted["test"]
    # measured again, on one set (each is a subprocess): the record holds that one set, so
    # only its weights' sha256 differs
    recorded.write_text(json.dumps({**planted, "test": {"mams": {}}, "sha256": "0" * 64}))
    one = {"mams": tests_by_name["mams"]}
    again = default_model.teacher_scores(distill.ABSA, teacher, one, recorded.parent)
    assert again["test"] == {"mams": result["teacher_test"]["mams"]}
    assert again["sha256"] == teacher_file["sha256"]
    recorded.write_text(json.dumps(teacher_file))  # the four sets' record, for the report
    # a rebuilt teacher of the same run name (other weights) keeps its record beside the
    # old one's, which stays as it was (it overwrote it, the committed record of the teacher
    # a shipped model was distilled from)
    older = recorded.with_name("teacher-teacher-0badc0de.json")
    older.write_text(json.dumps({**teacher_file, "sha256": "0badc0de" * 8}))
    again = default_model.teacher_scores(distill.ABSA, teacher, tests_by_name, recorded.parent)
    assert again == teacher_file and json.loads(recorded.read_text()) == teacher_file
    assert json.loads(older.read_text())["sha256"] == "0badc0de" * 8
    older.unlink()
    # benchmarks/teacher_gap.py writes its own teacher-gap__*.json beside the records: no
    # teacher record (no "dev"), and the report stopped at it with KeyError: 'dev'
    gap = recorded.parent / "teacher-gap__absa-default-1.8.0.json"
    gap.write_text(json.dumps({"artifact": "a", "teacher": "t", "tests": {}}))

    table = distill.report().splitlines()
    assert table[2].startswith("| teacher `") and "| 1 |" in table[2]
    acc = result["test"]["mams"]["accuracy"] * 100
    assert table[3].startswith("| tiny | 2 |") and f"{acc:.2f} / " in table[3]

    before = result_path.stat().st_mtime_ns
    distill.main()  # resumable: the seed's file exists, nothing is trained again
    assert result_path.stat().st_mtime_ns == before

    # the result names the code that trained the run, not the code there when it is scored:
    # a seed scored in a later session (its run trained already) keeps its run's version
    run_json = tmp_path / "runs" / "tiny.s2" / "run.json"
    assert result["code_version"] == json.loads(run_json.read_text())["code_version"]
    run_json.write_text(json.dumps({**json.loads(run_json.read_text()), "code_version": "c0de"}))
    result_path.unlink()
    distill.main()
    again = json.loads(result_path.read_text())
    assert again["code_version"] == "c0de" and again["scored_code_version"] != "c0de"
