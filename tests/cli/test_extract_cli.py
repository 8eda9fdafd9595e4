"""The extraction commands in-process: ``absa train --task extract`` on SemEval-style XML
(aspect-free sentences and conflict terms included), ``absa evaluate`` with span scores on
a run and on its artifact, ``absa export``, ``absa predict`` without aspects."""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from absa.cli import main
from absa.model.tagger_config import TaggerConfig
from tests.helpers import extraction_sentences, until_file


def write_xml(path: Path, sentences: list, polarity: str = "positive") -> Path:
    rows = ["<sentences>"]
    for i, s in enumerate(sentences):
        terms = "".join(
            f"<aspectTerm term={quoteattr(s.text[sp.start : sp.end])} polarity="
            f'"{polarity if j else "conflict"}" from="{sp.start}" to="{sp.end}"/>'
            for j, sp in enumerate(s.spans)
        )
        rows.append(
            f'<sentence id="{i}"><text>{s.text}</text><aspectTerms>{terms}</aspectTerms></sentence>'
        )
    path.write_text("\n".join(rows + ["</sentences>"]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def extract_run(tmp_path_factory: pytest.TempPathFactory, small_glove: Path) -> Path:
    tmp = tmp_path_factory.mktemp("extract-cli")
    xml = write_xml(tmp / "train.xml", extraction_sentences())
    cfg = tmp / "cfg.json"
    cfg.write_text(
        json.dumps(
            {
                "model": {"hidden_size": 16, "char_dim": 8, "char_filters": 8, "dropout": 0.0},
                "train": {
                    "glove": str(small_glove),
                    "glove_top_k": 0,
                    "lr": 0.02,
                    "epochs": 30,
                    "patience": 100,
                    "batch_size": 8,
                },
            }
        )  # fmt: skip
    )
    run = tmp / "run"
    code = main(["train", "--task", "extract", "--train", str(xml), "--dev", str(xml),
                 "--config", str(cfg), "--out", str(run), "--eval", str(xml)])  # fmt: skip
    assert code == 0
    return run


def test_train_writes_a_tagger_run_with_span_scores(extract_run: Path, small_glove: Path) -> None:
    import hashlib

    info = json.loads((extract_run / "run.json").read_text())
    assert info["kind"] == "absa-tagger-run" and "partial" not in info
    # the vector file is named by its sha256, not its path alone (no teacher here)
    digest = hashlib.sha256(small_glove.read_bytes()).hexdigest()
    assert info["inputs"] == {
        "vectors": {"path": str(small_glove), "sha256": digest},
        "teacher": None,
    }
    # what made it, as a sentiment run's run.json says: its config file's bytes, the
    # libraries, and a command that runs as written (quoted)
    cfg = extract_run.parent / "cfg.json"
    assert info["data"]["config"] == [
        {"path": str(cfg), "sha256": hashlib.sha256(cfg.read_bytes()).hexdigest()}
    ]
    assert {"python", "torch", "numpy"} <= set(info["environment"])
    assert info["reproduce"].startswith("absa train --train ")
    assert f"--config {cfg}" in info["reproduce"] and "--task extract" in info["reproduce"]
    (ev_file,) = json.loads((extract_run / "metrics.json").read_text())["eval"].values()
    xml = extract_run.parent / "train.xml"
    assert ev_file["file"] == {
        "path": str(xml),
        "sha256": hashlib.sha256(xml.read_bytes()).hexdigest(),
    }
    assert not Path(f"{extract_run}.partial").exists()  # removed once the run is whole
    dev = [json.loads(line) for line in (extract_run / "dev.jsonl").read_text().splitlines()]
    assert dev[0]["source"].endswith("train.xml:0")  # the per-source dev scores need it
    metrics = json.loads((extract_run / "metrics.json").read_text())
    assert metrics["dev"]["f1"] == pytest.approx(100.0)  # conflict terms are aspects too
    (ev,) = metrics["eval"].values()
    assert ev["gold"] == sum(len(s.spans) for s in extraction_sentences())


def test_evaluate_run_and_artifact_alike(
    extract_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xml = write_xml(tmp_path / "test.xml", extraction_sentences())
    out = tmp_path / "artifact"
    assert main(["export", "--run", str(extract_run), "--out", str(out)]) == 0
    assert "extractor written to" in capsys.readouterr().out
    reports = []
    for model in (extract_run, out):
        assert main(["evaluate", "--model", str(model), "--data", str(xml), "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    keys = ("precision", "recall", "f1", "true_positives", "gold", "predicted")
    assert [reports[0][k] for k in keys] == [reports[1][k] for k in keys]
    assert reports[0]["f1"] == pytest.approx(100.0)
    # which bytes were scored, by which code, as a sentiment report says
    import hashlib

    assert reports[0]["model_identity"]["kind"] == "run"
    assert (
        reports[1]["model_identity"]["onnx_sha256"]
        == hashlib.sha256((out / "model.onnx").read_bytes()).hexdigest()
    )
    for rep in reports:
        assert rep["files"] == [
            {"path": str(xml), "sha256": hashlib.sha256(xml.read_bytes()).hexdigest()}
        ]
        assert rep["code_version"]
    # the artifact keeps what the run recorded of its making, and the export's command
    meta = json.loads((out / "metadata.json").read_text())
    info = json.loads((extract_run / "run.json").read_text())
    assert meta["train"]["inputs"] == info["inputs"]
    assert meta["train"]["environment"] == info["environment"]
    assert meta["train"]["data"] == info["data"]
    assert meta["train_config"] == json.loads((extract_run / "train_config.json").read_text())
    assert meta["export_code_version"] and meta["onnx"]["exported_with"]["onnx"]
    assert meta["reproduce"] == info["reproduce"] + f"\nabsa export --run {extract_run} --out {out}"
    # the card's data statement is the run's: one small file, no --exclude (it said
    # SemEval-2014, MAMS, ACOS and "sentences of every reported test set are dropped")
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"`{extract_run.parent / 'train.xml'}`" in card
    (data,) = [line for line in card.splitlines() if line.startswith("Data:")]
    assert data == (
        "Data: the training files listed above. No training sentence was dropped for occurring "
        "in a test set: the run had no --exclude files."
    )


def test_predict_without_aspects_uses_the_extractor(
    extractor_artifact: Path, artifact: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "the wine list was great but the food was awful"
    code = main(["predict", "--model", str(artifact), "--extractor", str(extractor_artifact),
                 "--text", text])  # fmt: skip
    assert code == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(r["term"], "confidence" in r["extracted"]) for r in results] == [
        ("wine list", True),
        ("food", True),
    ]


def test_predict_without_aspects_or_extractor_is_one_line(
    artifact: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ABSA_EXTRACTOR", raising=False)
    assert main(["predict", "--model", str(artifact), "--text", "the food was great"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--extractor" in err


def test_a_missing_extractor_from_the_environment_is_named_as_its(
    artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """It said "/x: does not exist", not where the path came from (serve and absa.load do)."""
    monkeypatch.setenv("ABSA_EXTRACTOR", str(tmp_path / "gone"))
    assert main(["predict", "--model", str(artifact), "--text", "the food was great"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("absa predict: error: ABSA_EXTRACTOR: "), err
    assert str(tmp_path / "gone") in err
    monkeypatch.delenv("ABSA_EXTRACTOR")
    assert main(["predict", "--model", str(artifact), "--text", "the food was great",
                 "--extractor", str(tmp_path / "gone")]) == 2  # fmt: skip
    assert "error: --extractor: " in capsys.readouterr().err


def test_python_api_extracts_when_no_aspects_are_given(
    extractor_artifact: Path, artifact: Path
) -> None:
    from absa import load

    clf = load(artifact, extractor=extractor_artifact, device="cpu")
    got = clf("the wine list was great but the food was awful")
    assert [(p.term, p.start, p.end) for p in got] == [("wine list", 4, 13), ("food", 32, 36)]
    assert all(p.extracted is not None and p.to_dict()["extracted"] for p in got)
    assert clf("the food was great", ["food"])[0].extracted is None


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_device_for_the_tagger_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str
) -> None:
    """The tagger trains on the CPU alone: --device cuda was ignored without a word (a run on
    the CPU where a GPU was asked for), as the other sentiment-only flags were once."""
    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    code = main(["train", "--task", "extract", "--train", str(xml), "--device", device,
                 "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and not (tmp_path / "run").exists()
    assert err == "absa train: error: --device: for sentiment models (--task terms or category)"


def test_extract_presets_are_checked_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from absa.training.tagger_build import PRESETS
    from absa.training.tagging import TagTrainConfig

    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    code = main(["train", "--task", "extract", "--train", str(xml), "--preset", "atae-lstm",
                 "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "fast, crf, accurate" in err
    for model, train in PRESETS.values():  # every preset builds valid configs
        TaggerConfig.from_dict(model)
        TagTrainConfig.from_dict(train)
    code = main(["train", "--task", "extract", "--train", str(xml), "--preset", "fast",
                 "--dev-seed", "1", "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--dev-seed: for sentiment models" in err
    # the sentiment path's flags were ignored here: a run without what was asked for
    flags = ["--skip-invalid", "--transfer", str(xml), "--train-more", str(xml)]
    code = main(["train", "--task", "extract", "--train", str(xml), "--preset", "fast",
                 *flags, "--dev-from-train", "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.endswith(
        "--skip-invalid, --transfer, --train-more, --dev-from-train: for sentiment models "
        "(--task terms or category)"
    ), err
    # epochs 0 ended in a state-dict error after the data was read; a missing --eval file
    # was found only after the training
    for extra, words in (
        (["--epochs", "0"], "--epochs is at least 1, not 0"),
        (["--eval", str(tmp_path / "missing.xml")], "missing.xml: no such file"),
    ):
        code = main(["train", "--task", "extract", "--train", str(xml), "--preset", "fast",
                     *extra, "--out", str(tmp_path / "run")])  # fmt: skip
        err = capsys.readouterr().err.strip()
        assert code == 2 and words in err and err.count("\n") == 0, err
    assert not (tmp_path / "run").exists()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"about": "a note is fine", "modle": {"crf": True}}))
    code = main(["train", "--task", "extract", "--train", str(xml), "--config", str(bad),
                 "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and "unknown top-level keys ['modle']" in err and str(bad) in err
    for content, words in (
        (b"{not json", "bad.json: Expecting"),
        (b'{"about": "caf\xe9"}', "bad.json: 'utf-8' codec"),
        (b"[1, 2]", "bad.json: a config is a table"),
        (b'{"model": 5}', "bad.json: model is a int"),
        (b'{"train": {"epochs": "2"}}', "bad.json: train.epochs: input should be a valid integer"),
        (b'{"model": {"crf": "yes"}}', "bad.json: model.crf: input should be a valid boolean"),
        (b'{"train": {"epoks": 2}}', "bad.json: unknown tagger train config keys: ['epoks']"),
    ):
        bad.write_bytes(content)
        code = main(["train", "--task", "extract", "--train", str(xml), "--config", str(bad),
                     "--out", str(tmp_path / "run")])  # fmt: skip
        err = capsys.readouterr().err.strip()
        assert code == 2 and words in err and err.count("\n") == 0, (content, err)
    assert not (tmp_path / "run").exists()


def test_a_killed_run_leaves_its_best_epoch_so_far(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess
    import sys
    import time

    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    cfg = tmp_path / "cfg.json"
    train = {"glove": str(small_glove), "glove_top_k": 0, "lr": 0.02, "epochs": 100000,
             "patience": 100000, "batch_size": 8}  # fmt: skip
    model = {"hidden_size": 16, "char_dim": 8, "char_filters": 8, "dropout": 0.0}
    cfg.write_text(json.dumps({"model": model, "train": train}))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "absa.cli", "train", "--task", "extract", "--train", str(xml),
           "--dev", str(xml), "--config", str(cfg), "--out", str(run)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    partial = Path(f"{run}.partial")

    def best_f1() -> float:  # the partial run's best so far (it is swapped in whole)
        try:
            return json.loads((partial / "metrics.json").read_text())["dev"]["f1"]
        except FileNotFoundError:
            return -1.0

    try:  # F1 100 cannot be beaten: the partial run stays as it is from then on
        deadline = time.monotonic() + 120
        while best_f1() < 100.0 and time.monotonic() < deadline:
            assert proc.poll() is None, "training ended before it was killed"
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    assert run.is_dir() and not any(run.iterdir())  # its claim, empty: trained into again
    info = json.loads((partial / "run.json").read_text())
    assert info["partial"]["epochs_done"] == info["best_epoch"] >= 1
    out = tmp_path / "artifact"
    assert main(["export", "--run", str(partial), "--out", str(out)]) == 0  # parity-checked
    capsys.readouterr()
    assert main(["evaluate", "--model", str(out), "--data", str(xml), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == pytest.approx(100.0)


def test_aspect_free_share_is_recorded_and_checked(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers import EMPTY_SENTENCES

    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    train = {"glove": str(small_glove), "glove_top_k": 0, "epochs": 1, "aspect_free": 0.0}
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"model": {"hidden_size": 8, "char_filters": 4}, "train": train}))
    run = tmp_path / "run"
    code = main(["train", "--task", "extract", "--train", str(xml), "--dev", str(xml),
                 "--config", str(cfg), "--out", str(run)])  # fmt: skip
    assert code == 0
    sentences = json.loads((run / "run.json").read_text())["sentences"]
    assert sentences["aspect_free_left_out"] == len(EMPTY_SENTENCES) > 0
    assert sentences["train"] == len(extraction_sentences()) - len(EMPTY_SENTENCES)
    cfg.write_text(json.dumps({"train": {**train, "aspect_free": 1.5}}))
    code = main(["train", "--task", "extract", "--train", str(xml), "--config", str(cfg),
                 "--out", str(tmp_path / "bad")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "aspect_free must be in [0, 1]" in err
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            ["--text", "the food", "--aspect", "food", "--output", "o.jsonl"],
            "--output needs --input",
        ),
        (["--input", "i.jsonl", "--output", "o.jsonl", "--text", "x"], "--input scores a file"),
        (["--input", "i.jsonl", "--output", "o.jsonl", "--explain"], "--input scores a file"),
        (
            ["--input", "i.jsonl", "--output", "o.jsonl", "--workers", "8"],
            "--workers: for --engine ray",
        ),
        (
            ["--text", "the food", "--aspect", "food", "--num-gpus", "1"],
            "--num-gpus: for --engine ray",
        ),
        (  # Ray's actors load no extractor (the local engine extracts a file's texts)
            ["--engine", "ray", "--input", "i.jsonl", "--output", "o", "--extractor", "shipped"],
            "--extractor with --input runs on the local engine",
        ),
        (  # a missing extractor beside --aspect exited 0: it was never loaded
            ["--text", "the food", "--aspect", "food", "--extractor", "/nonexistent"],
            "--extractor finds the aspects of a --text given without --aspect",
        ),
        (
            ["--text", "the food", "--category", "food", "--extractor", "/nonexistent"],
            "--extractor finds the aspects of a --text given without --aspect",
        ),
    ],
)
def test_predict_refuses_flags_it_would_ignore(
    artifact: Path, tmp_path: Path, extra: list[str], words: str,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """--output without --input printed to stdout and wrote no file; --text, --explain and
    Ray's --workers beside a local --input did nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "i.jsonl").write_text('{"text": "the food", "aspect": "food"}\n')
    assert main(["predict", "--model", str(artifact), *extra]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("flag", ["--no-calibrate", "--top-map"])
def test_export_of_an_extractor_refuses_the_sentiment_calibration_flags(
    extract_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    """They were ignored without a word: a tagger's artifact has no temperature or map."""
    out = tmp_path / "art"
    assert main(["export", "--run", str(extract_run), "--out", str(out), flag]) == 2
    assert f"{flag}: for a sentiment model, not an extractor run" in capsys.readouterr().err
    assert not out.exists()


@pytest.fixture
def quick_cfg(tmp_path: Path, small_glove: Path) -> Path:
    """One epoch of a small tagger: a test of what is refused fails fast if it trains."""
    cfg = tmp_path / "cfg.json"
    train = {"glove": str(small_glove), "glove_top_k": 0, "epochs": 1, "batch_size": 8}
    cfg.write_text(json.dumps({"model": {"hidden_size": 8, "char_filters": 4}, "train": train}))
    return cfg


def test_an_out_under_a_file_is_refused_before_training(
    tmp_path: Path, quick_cfg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It failed after the first epoch, naming run.partial.new, a path the user never gave."""
    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    (tmp_path / "afile").write_text("the user's\n")
    out = tmp_path / "afile" / "run"
    code = main(["train", "--task", "extract", "--train", str(xml), "--config", str(quick_cfg),
                 "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err == (
        f"absa train: error: {tmp_path / 'afile'} is not a directory; cannot write {out}\n"
    ), err


def test_a_killed_runs_partial_is_not_thrown_away_by_the_next_run(
    tmp_path: Path, quick_cfg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """<out>.partial holds a killed run's best epoch (it exports); training into the same
    --out again replaced it at the first epoch and removed it at the end."""
    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    partial = tmp_path / "run.partial"
    partial.mkdir()
    (partial / "run.json").write_text('{"the killed run": true}')
    code = main(["train", "--task", "extract", "--train", str(xml), "--config", str(quick_cfg),
                 "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"{partial} exists" in err, err
    assert (partial / "run.json").read_text() == '{"the killed run": true}'
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--heldout-empty", "-5"], "--heldout-empty is a number of sentences, >= 0, not -5"),
        (["--heldout-empty", "50", "--dev", "DEV"], "--heldout-empty: for a run without --dev"),
        (["--heldout-empty", "200", "--dev", "DEV"], "--heldout-empty: for a run without --dev"),
        (["--heldout-empty", "50", "--task", "terms"], "--heldout-empty is for --task extract"),
    ],
)
def test_heldout_empty_that_would_do_the_wrong_thing_is_refused(
    tmp_path: Path, quick_cfg: Path, flags: list[str], words: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """-5 held out all aspect-free sentences but the last five ([:-5]); beside --dev the
    number was ignored (no sentences are held out there)."""
    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    flags = [str(xml) if f == "DEV" else f for f in flags]
    code = main(["train", "--task", "extract", "--train", str(xml), "--config", str(quick_cfg),
                 *flags, "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "run").exists()


def test_evaluate_of_several_files_scores_each_beside_the_pool(
    extractor_artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two files gave the pooled score alone, where a sentiment report scores each file."""
    sentences = extraction_sentences()
    half = len(sentences) // 2
    a = write_xml(tmp_path / "a.xml", sentences[:half])
    b = write_xml(tmp_path / "b.xml", sentences[half:])
    model = str(extractor_artifact)
    assert main(["evaluate", "--model", model, "--data", str(a), str(b), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert list(rep["by_file"]) == [str(a), str(b)]
    assert sum(r["gold"] for r in rep["by_file"].values()) == rep["gold"]
    assert sum(r["sentences"] for r in rep["by_file"].values()) == rep["sentences"]
    assert main(["evaluate", "--model", model, "--data", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[1].startswith(f"{a}: span P ")
    assert main(["evaluate", "--model", model, "--data", str(a), str(a)]) == 2
    assert "given twice" in capsys.readouterr().err


def test_evaluate_on_a_file_without_sentences_is_an_error(
    extractor_artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed "span P 0.00 R 0.00 F1 0.00 (... 0 sentences)" and exit 0."""
    empty = tmp_path / "empty.xml"
    empty.write_text("<sentences>\n</sentences>\n", encoding="utf-8")
    code = main(["evaluate", "--model", str(extractor_artifact), "--data", str(empty)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err == f"absa evaluate: error: {empty}: no sentences\n"


@pytest.mark.parametrize("kind", ["tagger", "sentiment"])
@pytest.mark.parametrize("where", ["exists", "under a file"])
def test_export_refuses_a_bad_out_before_the_export(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    kind: str,
    where: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An existing --out was said only after the ONNX export and its parity check; one
    under a file was "[Errno 17] File exists: 'afile'". Here the run cannot be exported
    at all (its weights are gone), so only a check made first names --out."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(request.getfixturevalue("tagger_run" if kind == "tagger" else "tiny_run"), run)
    (run / "weights.safetensors").unlink()
    if where == "exists":
        out = tmp_path / "art"
        out.mkdir()
        words = f"{out} exists; export into a new directory"
    else:
        (tmp_path / "afile").write_text("the user's\n")
        out = tmp_path / "afile" / "art"
        words = f"{tmp_path / 'afile'} is not a directory; cannot write {out}"
    assert main(["export", "--run", str(run), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"absa export: error: {words}\n"


def test_an_extractor_run_that_cannot_be_written_is_said_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out /proc/t` failed after the first epoch, naming '/proc/t.partial.new'."""
    train = tmp_path / "train.jsonl"
    train.write_text('{"text": "The food was great", "aspects": [[4, 8]]}\n')
    argv = ["train", "--task", "extract", "--train", str(train), "--out", "/proc/absa-t"]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("absa train: error: cannot write /proc: ")


@pytest.mark.parametrize("kind", ["tagger", "sentiment"])
def test_a_run_whose_weights_are_cut_short_is_one_line(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tagger run's weights cut short (a copy that stopped) were a SafetensorError
    traceback and exit 1 from absa evaluate and export; a sentiment run's were one line."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(request.getfixturevalue("tagger_run" if kind == "tagger" else "tiny_run"), run)
    weights = run / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:900])
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "The food was great", "aspect": "food", "label": "positive"}\n')
    assert main(["evaluate", "--model", str(run), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"absa evaluate: error: {weights}: cannot be read as safetensors"), err
    assert len(err.splitlines()) == 1, err


def endless_extract(tmp_path: Path, small_glove: Path, run: Path) -> list[str]:
    """The arguments of an `absa train --task extract` into ``run`` that trains until it is
    stopped (a tiny tagger, epochs without end)."""
    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    cfg = tmp_path / "cfg.json"
    train = {"glove": str(small_glove), "glove_top_k": 0, "epochs": 100000, "patience": 100000}
    cfg.write_text(json.dumps({"model": {"hidden_size": 8, "char_dim": 4, "char_filters": 4},
                               "train": train}))  # fmt: skip
    return ["train", "--task", "extract", "--train", str(xml), "--dev", str(xml),
            "--config", str(cfg), "--out", str(run)]  # fmt: skip


def test_sigterm_says_where_the_best_epoch_so_far_is(tmp_path: Path, small_glove: Path) -> None:
    """SIGTERM (a pod evicted) ended an extractor's training with 143 and no word of the
    OUT.partial run it leaves, nor that it exports."""
    import signal
    import subprocess
    import sys

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "absa.cli", *endless_extract(tmp_path, small_glove, run)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    partial = Path(f"{run}.partial")
    until_file(proc, partial / "run.json", "epoch kept", pause=0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert (
        f"absa train: stopped: {partial} holds the best epoch so far (absa export --run "
        f"{partial} exports it)" in err
    ), err


def test_an_out_with_a_trailing_slash_is_the_same_run(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out run/` kept its best epoch in run/.partial, inside OUT: the run's last write
    then met OUT made ("File exists") and every epoch was lost (and the same command was
    refused: OUT not empty)."""
    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"model": {"hidden_size": 8, "char_dim": 4, "char_filters": 4},
                               "train": {"glove": str(small_glove), "glove_top_k": 0,
                                         "epochs": 2}}))  # fmt: skip
    code = main(["train", "--task", "extract", "--train", str(xml), "--dev", str(xml),
                 "--config", str(cfg), "--out", f"{tmp_path / 'run'}/"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "run" / "run.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.json", "run", "train.xml"]


@pytest.mark.parametrize(
    ("table", "key", "value", "words"),
    [
        # 0 divided every logit: loss nan, NaN weights, exit 0, an artifact that never loads
        ("train", "temperature", 0, "temperature must be > 0, not 0.0"),
        ("train", "temperature", -1.0, "temperature must be > 0, not -1.0"),
        # glove_words[:-5]: a 400,000-word vocabulary
        ("train", "glove_top_k", -5, "glove_top_k must be >= 0, not -5"),
        # a weight of -2 on the gold loss
        ("train", "distill", 3.0, "distill must be in [0, 1], not 3.0"),
        ("train", "word_dropout", 1.5, "word_dropout must be in [0, 1), not 1.5"),
        ("train", "patience", 0, "patience must be >= 1, not 0"),
        # a raw torch message after the data was read
        ("model", "char_filters", 0, "char_filters must be >= 1, not 0"),
        ("model", "char_dim", 0, "char_dim must be >= 1, not 0"),
        ("model", "hidden_size", 0, "hidden_size must be >= 1, not 0"),
        # "max_len must leave room for [CLS]" named a key the config does not have
        ("train", "max_pieces", 2, "max_pieces must be >= 3 ([CLS], a piece, [SEP]), not 2"),
    ],
)
def test_tagger_config_values_that_would_train_wrong_are_refused(
    tmp_path: Path,
    quick_cfg: Path,
    capsys: pytest.CaptureFixture[str],
    table: str,
    key: str,
    value: object,
    words: str,
) -> None:
    xml = write_xml(tmp_path / "train.xml", extraction_sentences())
    data = json.loads(quick_cfg.read_text())
    data[table][key] = value
    quick_cfg.write_text(json.dumps(data))
    code = main(["train", "--task", "extract", "--train", str(xml), "--config", str(quick_cfg),
                 "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert err.endswith(f"{quick_cfg}: {words}"), err
    assert not (tmp_path / "run").exists()


def test_a_model_given_in_the_others_place_says_where_it_goes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`absa predict --model model/artifacts/extractor` said only "kind 'absa-extractor' is
    not 'absa-artifact'", and --extractor given the sentiment model the reverse: each says
    what the directory is and which setting or flag takes it (as a category model's does)."""
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR
    from absa.model.runtime import DEFAULT_MODEL_DIR

    ask = ["--text", "The fries were soggy"]
    assert main(["predict", "--model", str(DEFAULT_EXTRACTOR_DIR), *ask, "--aspect", "fries"]) == 2
    err = capsys.readouterr().err
    assert (
        "is an aspect extractor" in err
        and "(give it as ABSA_EXTRACTOR, --extractor, absa.load(extractor=path))" in err
    )
    assert main(["predict", "--extractor", str(DEFAULT_MODEL_DIR), *ask]) == 2
    err = capsys.readouterr().err
    assert (
        "is a sentiment model" in err
        and "(give it as ABSA_MODEL_DIR, --model, absa.load(path))" in err
    )


def test_a_second_extract_train_into_an_out_another_is_writing_into_is_refused(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`absa train --task extract` did not claim --out as `absa train` of sentiment does: two
    runs into one --out both passed the "exists" check (OUT is written at the end) and shared
    OUT.partial, each replacing the other's best epoch; one that started after the first
    epoch was told of "a killed run's best epoch". It is claimed now (flock on OUT for the
    whole command), and the second is refused as sentiment training's is."""
    import signal
    import subprocess
    import sys

    run = tmp_path / "run"
    argv = endless_extract(tmp_path, small_glove, run)
    first = subprocess.Popen(
        [sys.executable, "-m", "absa.cli", *argv], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        partial = Path(f"{run}.partial")
        until_file(first, partial / "run.json", "epoch kept", pause=0.05)
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == (
            f"absa train: error: {run}: another absa train is writing into it; "
            "train into another directory\n"
        ), err
        assert run.is_dir() and first.poll() is None  # the first one's, still training
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=120)
    assert first.returncode == 143
    assert (partial / "run.json").is_file()  # its best epoch so far, kept
    assert not run.exists()  # the claim's directory, empty: gone with the stopped run


def test_exporting_a_tagger_that_found_nothing_on_dev_is_warned_of(
    extract_run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 1-epoch tagger with dev F1 0 exported without a word, and served it answered every
    text with no aspect. Its run's dev record (0 spans marked) stands in for such a run."""
    import shutil

    run = shutil.copytree(extract_run, tmp_path / "run")
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["dev"] = {**metrics["dev"], "predicted": 0, "true_positives": 0, "f1": 0.0}
    (run / "metrics.json").write_text(json.dumps(metrics))
    with caplog.at_level("WARNING"):
        assert main(["export", "--run", str(run), "--out", str(tmp_path / "art")]) == 0
    assert "finds no aspect in its dev split (0 spans of" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert main(["export", "--run", str(extract_run), "--out", str(tmp_path / "b")]) == 0
    assert "finds no aspect" not in caplog.text
