"""A temperature of its own for requests that read like one domain (absa.model.domain): the
word classifier separates a domain by its words, tempering changes only the domain's rows and
no answer, the fit recovers a known temperature, and an artifact exported with one serves
torch's probabilities with T, the domain's temperature and the map applied."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from absa.errors import ArtifactError
from absa.model import artifact
from absa.model.calibration import expected_calibration_error, softmax
from absa.model.card import calibration_lines
from absa.model.domain import DOMAIN_FILE, DomainTemperature, fit_words, temper, words_of
from absa.model.export import DomainSentences, _calibrate, export
from absa.model.recalibrate import with_domain
from absa.model.runtime import Runtime
from absa.model.text import Token, tokenize
from absa.training.rundir import load_run
from tests.helpers import ONNX_EXPORT_WARNINGS, synthetic_examples

pytestmark = ONNX_EXPORT_WARNINGS

DOMAIN_WORDS = ("pizza", "wine")  # sentences about these are "the domain" here


def inside(text: str) -> bool:
    return any(w in text.split() for w in DOMAIN_WORDS)


def test_the_classifier_finds_the_domain_by_its_words_and_tempering_touches_only_it() -> None:
    texts = sorted({e.text for e in synthetic_examples(300, seed=7)})
    words = [words_of(tokenize(t)) for t in texts]
    bias, weights = fit_words(words, [inside(t) for t in texts])
    assert weights["pizza"] > 1 and weights["wine"] > 1 and abs(weights["the"]) < 0.5
    dom = DomainTemperature("test", bias, weights, 2.0)
    held = [e.text for e in synthetic_examples(60, seed=8)]
    tokens = [tokenize(t) for t in held]
    assert ((dom.logits(tokens) > 0) == np.array([inside(t) for t in held])).all()
    rng = np.random.default_rng(0)
    p = softmax(rng.normal(0, 2, (len(held), 3))).astype(np.float32)
    q = dom.apply(p, tokens)
    rows = np.array([inside(t) for t in held])
    assert q.dtype == p.dtype and (q.argmax(1) == p.argmax(1)).all()
    np.testing.assert_array_equal(q[~rows], p[~rows])
    assert (q[rows].max(1) < p[rows].max(1)).all()  # softer where it reads as the domain
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(replace(dom, temperature=1.0).apply(p, tokens), p, atol=1e-6)
    specials = [Token("[CLS]", 0, 0), Token("pizza", 0, 5)]  # tokens that cover no text: none
    assert words_of(specials) == frozenset({"pizza"})
    with pytest.raises(ValueError, match="in the domain and outside it"):
        fit_words(words, [True] * len(words))


def test_the_fit_recovers_a_known_domain_temperature() -> None:
    """Labels drawn at T 1 outside the domain and at T 2.5 inside: after the global T (in
    between) the domain's own takes the inside items to 2.5, the others' back to 1, and the
    inside items' ECE falls."""
    rng = np.random.default_rng(1)
    n = 20000
    rows = rng.random(n) < 0.3
    z = rng.normal(0, 2.5, (n, 3))
    truth = np.where(rows[:, None], softmax(z, 2.5), softmax(z, 1.0))
    y = (rng.random(n)[:, None] > truth.cumsum(1)).sum(1)
    cal = _calibrate(z, y, domain_rows=rows)
    t, r = cal["temperature"], cal["domain"]["temperature"]
    r_out = cal["domain"]["outside_temperature"]
    assert 1.0 < t < 2.5 and t * r == pytest.approx(2.5, rel=0.06)
    assert t * r_out == pytest.approx(1.0, rel=0.05)
    dom = cal["domain"]
    assert dom["dev_items"] == rows.sum() and dom["dev_ece_after"] < 0.5 * dom["dev_ece_before"]
    assert (
        cal["method"] == "temperature+domain"
        and cal["dev"]["ece_after"] < cal["dev"]["ece_temperature"]
    )


# a dev set of 600 items, the domain's labels wrong one time in two, the others one in eight:
# the tiny run is as sure of both, so the domain wants a softer temperature
DEV = [
    replace(e, label={"positive": "negative"}.get(e.label, "positive"))
    if (i % 2 if inside(e.text) else i % 8 == 0)
    else e
    for i, e in enumerate(synthetic_examples(300, seed=5))
]
TRAIN_TEXTS = sorted({e.text for e in synthetic_examples(300, seed=7)})
SENTENCES = DomainSentences("pizzeria", TRAIN_TEXTS, [inside(t) for t in TRAIN_TEXTS])


@pytest.fixture(scope="module")
def exported(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny_run exported on DEV four ways: T alone, T and the domain's, both with the map, and
    T with the map."""
    run = load_run(tiny_run)
    out = tmp_path_factory.mktemp("domain")
    args = (run.net, run.pipeline, run.model_config, DEV)
    export(*args, out / "t", {})
    export(*args, out / "domain", {}, domain=SENTENCES)
    export(*args, out / "map", {}, domain=SENTENCES, top_map=True)
    export(*args, out / "t-map", {}, top_map=True)
    return out


def test_an_artifact_given_a_domain_afterwards_serves_what_export_would(
    exported: Path, tmp_path: Path
) -> None:
    """``with_domain`` on the artifact exported with T and the map (its run gone) fits on the
    graph's logits what export fitted on torch's: the same answers, within a hair."""
    spans = [(e.text, e.start, e.end) for e in DEV]
    labels = [e.label for e in DEV]
    meta = with_domain(exported / "t-map", tmp_path / "new", spans, labels, SENTENCES, "2")
    cal = meta["calibration"]
    assert cal["method"] == "temperature+domain+top_map" and meta["version"] == "2"
    assert (
        meta["recalibrated_from"]["version"]
        == artifact.read_metadata(exported / "t-map")["version"]
    )
    assert cal["graph_check"]["prediction_mismatches"] == 0
    new = Runtime.load(tmp_path / "new", device="cpu", threads=1).predict_proba(spans)
    direct = Runtime.load(exported / "map", device="cpu", threads=1).predict_proba(spans)
    old = Runtime.load(exported / "t-map", device="cpu", threads=1).predict_proba(spans)
    assert (new.argmax(1) == old.argmax(1)).all()
    np.testing.assert_allclose(new, direct, atol=1e-4)
    assert np.abs(new - old).max() > 0.05
    with pytest.raises(ArtifactError, match="without a domain's temperature"):
        with_domain(tmp_path / "new", tmp_path / "again", spans, labels, SENTENCES, "3")


def test_an_artifact_with_a_domain_temperature_serves_it(exported: Path) -> None:
    plain = Runtime.load(exported / "t", device="cpu", threads=1)
    rt = Runtime.load(exported / "domain", device="cpu", threads=1)
    cal = rt.metadata["calibration"]
    assert cal["method"] == "temperature+domain" and rt.domain is not None
    assert cal["domain"]["name"] == "pizzeria"
    assert cal["domain"]["sentences"]["inside"] == sum(SENTENCES.inside)
    assert DOMAIN_FILE in rt.metadata["files"]  # hashed with the other files
    spans = [(e.text, e.start, e.end) for e in DEV]
    a, b = plain.predict_proba(spans), rt.predict_proba(spans)
    rows = np.array([inside(e.text) for e in DEV])
    assert cal["temperature"] == plain.metadata["calibration"]["temperature"]  # the graph's T
    r_in, r_out = cal["domain"]["temperature"], cal["domain"]["outside_temperature"]
    np.testing.assert_allclose(b[rows], temper(a, rows, r_in)[rows], atol=1e-5)
    np.testing.assert_allclose(b[~rows], temper(a, ~rows, r_out)[~rows], atol=1e-5)
    assert (a.argmax(1) == b.argmax(1)).all() and r_in > 1.2 * r_out
    y = np.array([rt.labels.index(e.label) for e in DEV])
    assert expected_calibration_error(b[rows], y[rows]) < expected_calibration_error(
        a[rows], y[rows]
    )
    mapped = Runtime.load(exported / "map", device="cpu", threads=1)
    assert mapped.metadata["calibration"]["method"] == "temperature+domain+top_map"
    assert mapped.metadata["parity"]["max_abs_diff"] < 1e-5  # torch's, with all three applied
    section = "\n".join(calibration_lines(mapped.metadata))
    assert (
        "read as pizzeria reviews" in section
        and "as served (T, the domain's and the map)" in section
    )


def test_too_few_domain_items_or_no_temperature_are_refused(tiny_run: Path, tmp_path: Path) -> None:
    run = load_run(tiny_run)
    args = (run.net, run.pipeline, run.model_config)
    outside = [e for e in DEV if not inside(e.text)] + [e for e in DEV if inside(e.text)][:99]
    with pytest.raises(
        ValueError, match="at least 100 dev items that read as it and as many that do not; 99 of"
    ):
        export(*args, outside, tmp_path / "a", {}, domain=SENTENCES)
    with pytest.raises(ValueError, match="fitted after the global one"):
        export(*args, DEV, tmp_path / "b", {}, domain=SENTENCES, calibrate=False)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: {**d, "name": "another"},
        lambda d: {**d, "bias": float("nan")},
        lambda d: {**d, "weights": ["pizza"]},
        lambda d: {k: v for k, v in d.items() if k != "bias"},
    ],
)
def test_a_broken_domain_file_is_refused(exported: Path, tmp_path: Path, edit) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(exported / "domain", broken)
    raw = json.loads((broken / DOMAIN_FILE).read_text())
    (broken / DOMAIN_FILE).write_text(json.dumps(edit(raw)))  # NaN as JSON writes it
    meta = artifact.read_metadata(broken)
    artifact.record_files(meta, broken)  # checksums made to match: the content is refused
    artifact.write_metadata(broken, meta)
    with pytest.raises(ArtifactError, match="domain"):
        Runtime.load(broken, device="cpu", threads=1)
