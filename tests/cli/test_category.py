"""``absa train --task category`` and the category paths of evaluate, export and predict,
in-process on the synthetic category set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absa.cli import main
from absa.model import artifact
from tests.cli.test_train import tiny_config
from tests.helpers import category_examples


def write_categories(path: Path) -> Path:
    rows = [{"text": e.text, "category": e.category, "label": e.label} for e in category_examples()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def last_json(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_train_evaluate_export_predict(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_categories(tmp_path / "train.categories.jsonl")
    cfg = tiny_config(tmp_path / "cfg.json", small_glove)
    run, art = tmp_path / "run", tmp_path / "art"
    args = ["train", "--task", "category", "--train", str(data), "--dev", str(data)]
    assert main([*args, "--config", str(cfg), "--out", str(run), "--quiet"]) == 0
    config = json.loads((run / "model_config.json").read_text())
    assert config["aspect_source"] == "category"
    assert config["categories"] == ["ambience", "food", "service"]
    dev = [json.loads(x) for x in (run / "dev.jsonl").read_text().splitlines()]
    assert set(dev[0]) == {"text", "category", "label"}

    capsys.readouterr()
    assert main(["evaluate", "--model", str(run), "--data", str(data), "--json"]) == 0
    from_run = last_json(capsys)
    assert main(["export", "--run", str(run), "--out", str(art)]) == 0
    assert artifact.load(art).metadata["task"] == "category"
    assert main(["evaluate", "--model", str(art), "--data", str(data), "--json"]) == 0
    from_art = last_json(capsys)
    assert from_art["n"] == from_run["n"] == 32
    assert from_art["accuracy"] == from_run["accuracy"]  # torch and onnxruntime agree

    text = category_examples()[0].text
    assert main(["predict", "--model", str(art), "--text", text, "--category", "food"]) == 0
    (res,) = last_json(capsys)["results"]
    assert res["category"] == "food" and res["label"] in ("negative", "neutral", "positive")
    # as the REST body names them: --categories A B
    assert main(["predict", "--model", str(art), "--text", text, "--categories", "food"]) == 0
    assert last_json(capsys)["results"] == [res]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--category", "drinks"], "unknown category 'drinks'; known: ambience, food, service"),
        (["--category", "food", "--aspect", "pizza"], "--category goes with --text only"),
    ],
)
def test_predict_errors(
    category_artifact: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["predict", "--model", str(category_artifact), "--text", "the pizza", *extra])
    assert code != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_each_kind_of_model_refuses_the_other_request(
    category_artifact: Path, artifact: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            ["predict", "--model", str(category_artifact), "--text", "the food", "--aspect", "food"]
        )
        != 0
    )
    assert "aspect-category model" in capsys.readouterr().err
    assert (
        main(["predict", "--model", str(artifact), "--text", "the food", "--category", "food"]) != 0
    )
    assert "is an aspect-term model" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra", [[], ["--aspect", "food"], ["--extractor", "shipped"]], ids=["none", "aspect", "ext"]
)
def test_a_category_model_asked_without_categories_says_category(
    category_artifact: Path,
    extra: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without --category, a category model was told to want --aspect or --extractor
    (which then failed too), or to be served with ABSA_CATEGORY_MODEL: never --category."""
    monkeypatch.delenv("ABSA_EXTRACTOR", raising=False)
    code = main(["predict", "--model", str(category_artifact), "--text", "the food", *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "aspect-category model" in err and "--category" in err, err


def test_category_without_model_reads_the_category_model_setting(
    category_artifact: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--category without --model took the term model, whatever ABSA_CATEGORY_MODEL said,
    and said only that a category model is needed, not how to give one."""
    for var in ("ABSA_MODEL_DIR", "ABSA_REGISTRY", "ABSA_CATEGORY_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert main(["predict", "--text", "the food", "--category", "food"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--model" in err and "ABSA_CATEGORY_MODEL" in err, err
    assert str(Path("model") / "artifacts" / "category") in err, err  # the shipped one
    monkeypatch.setenv("ABSA_CATEGORY_MODEL", str(category_artifact))
    assert main(["predict", "--text", "the food", "--category", "food"]) == 0
    (res,) = last_json(capsys)["results"]
    assert res["category"] == "food"


def test_train_excludes_the_sentences_of_a_category_exclude_file(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--exclude was read with the aspect-term reader, skipping every record of a category
    file as invalid: nothing was excluded, a warning the only trace (test leakage)."""
    data = write_categories(tmp_path / "train.categories.jsonl")
    lines = data.read_text(encoding="utf-8").splitlines(keepends=True)
    test = tmp_path / "test.categories.jsonl"
    test.write_text("".join(lines[:4]), encoding="utf-8")  # two sentences, two categories each
    cfg = tiny_config(tmp_path / "cfg.json", small_glove, epochs=1)
    run = tmp_path / "run"
    args = ["train", "--task", "category", "--train", str(data), "--dev", str(data)]
    assert main([*args, "--exclude", str(test), "--config", str(cfg), "--out", str(run)]) == 0
    info = json.loads((run / "run.json").read_text())
    assert info["data"]["excluded_overlap"] == 4 and info["n_train"] == 32 - 4


def test_evaluate_reads_the_datas_categories_as_the_model_names_them(
    category_artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A category the model does not have stopped evaluate naming neither the file nor the
    line, even with --skip-invalid; "Food" or "FOOD", which predict and the API read as the
    model's "food", were refused the same way."""
    rows = [{"text": e.text, "category": e.category, "label": e.label} for e in category_examples()]
    rows[0]["category"] = rows[0]["category"].upper()
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["evaluate", "--model", str(category_artifact), "--data", str(data), "--json"]) == 0
    assert last_json(capsys)["n"] == len(rows)

    rows.insert(2, {"text": "the wine list", "category": "drinks", "label": "positive"})
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["evaluate", "--model", str(category_artifact), "--data", str(data), "--json"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert f"{data}:3: unknown category 'drinks'; known: ambience, food, service" in err, err
    assert len(err.splitlines()) == 1, err
    assert main([*args, "--skip-invalid"]) == 0
    report = last_json(capsys)
    assert report["n"] == len(rows) - 1 and report["skipped_invalid"] == 1


def test_training_reads_a_categorys_spellings_as_one_and_checks_dev_and_eval_first(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "FOOD" and "food" in the training data were two categories, each with half the data
    (and the model then refused "Food" as "several categories but for case"); a --dev or
    --eval file spelling a category otherwise, or naming one the training data lacks, failed
    after training, --skip-invalid or not, the eval report lost."""
    rows = [{"text": e.text, "category": e.category, "label": e.label} for e in category_examples()]
    mixed = [
        {**r, "category": r["category"].upper()} if i % 3 == 1 else r for i, r in enumerate(rows)
    ]
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in mixed), encoding="utf-8")
    upper = tmp_path / "upper.jsonl"
    upper.write_text("".join(json.dumps({**r, "category": r["category"].title()}) + "\n"
                             for r in rows), encoding="utf-8")  # fmt: skip
    cfg = tiny_config(tmp_path / "cfg.json", small_glove)
    run = tmp_path / "run"
    argv = ["train", "--task", "category", "--train", str(data), "--config", str(cfg), "--quiet"]
    assert main([*argv, "--dev", str(upper), "--eval", str(upper), "--out", str(run)]) == 0
    config = json.loads((run / "model_config.json").read_text())
    assert config["categories"] == ["ambience", "food", "service"]  # the most written spelling
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["eval"][str(upper)]["n"] == len(rows)
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps({**rows[0], "category": "drinks"}) + "\n" + json.dumps(rows[1]) + "\n"
    )
    out = tmp_path / "run2"
    assert main([*argv, "--eval", str(other), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{other}:1: unknown category 'drinks'" in err and not out.exists(), err
    assert main([*argv, "--dev", str(other), "--skip-invalid", "--out", str(out)]) == 0
