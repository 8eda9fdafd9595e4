"""Shadow scoring (ABSA_SHADOW_MODEL): a challenger answers the served requests' aspects
off the request path; what the two models said is counted, never served."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.service.conftest import make_settings

TEXTS = [
    "the wine list was great but the food was awful",
    "the staff was rude",
    "the food was fine and the staff was great",
    "the view was awful but the wine was great",
]


@pytest.fixture(scope="module")
def challenger(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another model than the served one (atae-lstm on other data): its answers differ."""
    from absa.training.exporting import export_run

    out = tmp_path_factory.mktemp("shadow") / "challenger"
    export_run(tiny_run, out, version="c1")
    return out


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of metric ``name`` in an exposition: their labels (sorted) to value."""
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def wait_for(client: TestClient | httpx.Client, outcome: str, n: float) -> str:
    """/metrics once ``absa_shadow_texts_total{outcome}`` reached ``n`` (30 s at most)."""
    deadline = time.monotonic() + 30
    while True:
        text = client.get("/metrics").text
        if samples(text, "absa_shadow_texts_total").get((("outcome", outcome),), 0) >= n:
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.02)


def wait_until(url: str, outcome: str, n: float) -> str:
    """``wait_for`` on a server at ``url``."""
    with httpx.Client(base_url=url, timeout=10) as client:
        return wait_for(client, outcome, n)


@pytest.fixture
def shadowed(artifact: Path, challenger: Path) -> Iterator[TestClient]:
    from absa.service.app import create_app

    settings = make_settings(artifact, shadow_model=challenger, shadow_rate=1.0)
    with TestClient(create_app(settings)) as c:
        yield c


def test_the_shadow_answers_every_served_aspect_and_each_pair_of_labels_is_counted(
    shadowed: TestClient, challenger: Path
) -> None:
    """Each served aspect is answered by the challenger too, on the span served; the counts
    by (served label, shadow label) are what the two models say of them, one by one."""
    import absa
    from absa.model.artifact import metadata_digest

    served = []
    for text, aspects in ((TEXTS[0], ["wine", "food"]), (TEXTS[1], ["staff"])):
        r = shadowed.post("/v1/predict", json={"text": text, "aspects": aspects})
        assert r.status_code == 200, r.text
        served.append((text, r.json()["results"]))
    items = [{"text": t, "aspects": [t.split()[1]]} for t in TEXTS[2:]]
    r = shadowed.post("/v1/predict/batch", json={"items": items})
    assert r.status_code == 200, r.text
    served += [(t, e["results"]) for t, e in zip(TEXTS[2:], r.json()["items"], strict=True)]
    text = wait_for(shadowed, "compared", len(TEXTS))

    theirs = absa.load(challenger, device="cpu", threads=1)
    model = f"{theirs.metadata['name']}:{theirs.metadata['version']}"
    expected: dict[tuple[str, str], int] = {}
    for t, results in served:
        spans = [{"term": x["term"], "start": x["start"], "end": x["end"]} for x in results]
        for ours, other in zip(results, theirs(t, aspects=spans), strict=True):
            key = (ours["label"], other.label)
            expected[key] = expected.get(key, 0) + 1
    counted = {
        (dict(k)["served"], dict(k)["shadow"]): v
        for k, v in samples(text, "absa_shadow_aspects_total").items()
        if dict(k)["model"] == model and v  # every pair of its labels is there from 0
    }
    assert counted == expected
    agreed = sum(n for (ours, theirs), n in expected.items() if ours == theirs)
    assert samples(text, "absa_shadow_agreed_total") == {(("model", model),): agreed}
    assert sum(expected.values()) == sum(len(res) for _, res in served) == 5
    outcomes = {dict(k)["outcome"]: v for k, v in samples(text, "absa_shadow_texts_total").items()}
    assert outcomes == {"compared": 4, "dropped": 0, "refused": 0, "failed": 0, "same": 0}
    assert samples(text, "absa_shadow_shift_count") == {(): 5}
    assert samples(text, "absa_shadow_seconds_count")[()] >= 1

    info = shadowed.get("/v1/model").json()["shadow"]
    assert info == {"model": model, "digest": metadata_digest(theirs.metadata), "rate": 1.0}


def test_every_answer_the_shadow_labels_otherwise_is_kept_in_the_answer_sample(
    artifact: Path, challenger: Path, tmp_path: Path
) -> None:
    """With an answer sample (ABSA_SAMPLE_PATH), each served answer the shadow labels
    otherwise is a line of it, ``kept: "disagreed"``, with the shadow's answer: the answers
    a person's label settles most. Here nothing else is kept (rate 0, below 0)."""
    import absa
    from absa.service.app import create_app

    path = tmp_path / "answers.jsonl"
    settings = make_settings(
        artifact, shadow_model=challenger, shadow_rate=1.0,
        sample_path=path, sample_rate=0.0, sample_below=0.0,
    )  # fmt: skip
    theirs = absa.load(challenger, device="cpu", threads=1)
    expected = []
    with TestClient(create_app(settings)) as c:
        for text in TEXTS:
            aspect = text.split()[1]
            r = c.post("/v1/predict", json={"text": text, "aspects": [aspect]})
            ours = r.json()["results"][0]
            (other,) = theirs(text, aspects=[aspect])
            said = (text, aspect, ours["label"], other.label, r.headers["x-request-id"])
            if other.label != ours["label"]:
                expected.append(said)
        wait_for(c, "compared", len(TEXTS))
    assert expected, "the two models agree on every text: nothing to test"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    got = [(x["text"], x["aspect"], x["predicted"], x["shadow"]["predicted"], x["request_id"])
           for x in lines]  # fmt: skip
    assert got == expected
    assert all(x["kept"] == "disagreed" for x in lines)
    model = f"{theirs.metadata['name']}:{theirs.metadata['version']}"
    assert all(x["shadow"]["model"] == model and x["model"] != model for x in lines)


def test_the_answers_served_are_the_same_with_a_shadow(
    shadowed: TestClient, client: TestClient
) -> None:
    body = {"text": TEXTS[0], "aspects": ["wine", "food"], "explain": True}
    assert (
        shadowed.post("/v1/predict", json=body).json()
        == client.post("/v1/predict", json=body).json()
    )
    assert client.get("/v1/model").json()["shadow"] is None


def test_a_shadow_that_is_the_served_model_compares_nothing(
    artifact: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same artifact (promoted since it was named the shadow) would agree with itself:
    its texts are counted as "same", no pair of labels is, and it is said at start."""
    from absa.service.app import create_app

    settings = make_settings(artifact, shadow_model=artifact, shadow_rate=1.0)
    with caplog.at_level(logging.WARNING), TestClient(create_app(settings)) as c:
        assert c.post("/v1/predict", json={"text": TEXTS[1], "aspects": ["staff"]}).is_success
        text = wait_for(c, "same", 1)
    assert not any(samples(text, "absa_shadow_aspects_total").values())
    assert "is the model served: nothing to compare" in caplog.text


def test_a_shadow_that_cannot_load_leaves_the_service_serving(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A challenger only: one that is gone (a held version pruned from the registry, say)
    is logged as an error and the worker serves without it, where stopping would take the
    service down at its next restart."""
    from absa.service.app import create_app

    gone = tmp_path / "versions" / "v9"
    with (
        caplog.at_level(logging.ERROR),
        TestClient(create_app(make_settings(artifact, shadow_model=gone))) as c,
    ):
        assert c.post("/v1/predict", json={"text": TEXTS[1], "aspects": ["staff"]}).is_success
        assert c.get("/v1/model").json()["shadow"] is None
    assert f"shadow: serving without one: {gone} cannot be loaded" in caplog.text


def _shadow(challenger: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    from absa.service.metrics import Metrics
    from absa.service.shadow import Shadow, load_shadow

    loaded = load_shadow(make_settings(challenger), Metrics(), challenger)
    return Shadow(loaded.predictor, loaded.metrics, **kwargs)  # type: ignore[arg-type]


def _answer(text: str, term: str, start: int | None = None) -> list[dict]:
    start = text.index(term) if start is None else start
    scores = {"positive": 0.5, "negative": 0.25, "neutral": 0.25}
    return [{"term": term, "start": start, "end": start + len(term), "label": "positive",
             "score": 0.5, "scores": scores}]  # fmt: skip


def test_what_the_queue_cannot_hold_is_dropped_and_counted(challenger: Path) -> None:
    """Never waits: past the queue's room a text is dropped (counted), the rest scored."""
    shadow = _shadow(challenger, rate=1.0, max_queued=2)
    for text in TEXTS[:3]:
        shadow.offer([(text, "m:1", _answer(text, text.split()[1]))], "another")
    shadow.start()
    shadow.close()
    text = shadow.metrics.expose().decode()
    outcomes = {dict(k)["outcome"]: v for k, v in samples(text, "absa_shadow_texts_total").items()}
    assert outcomes["dropped"] == 1 and outcomes["compared"] == 2, outcomes


def test_a_text_the_shadow_refuses_is_counted_and_the_rest_of_its_batch_scored(
    challenger: Path,
) -> None:
    shadow = _shadow(challenger, rate=1.0)
    bad = _answer(TEXTS[1], "staff", start=40)  # a span past the text's end
    shadow.offer([(TEXTS[1], "m:1", bad), (TEXTS[0], "m:1", _answer(TEXTS[0], "food"))], "x")
    shadow.start()
    shadow.close()
    text = shadow.metrics.expose().decode()
    outcomes = {dict(k)["outcome"]: v for k, v in samples(text, "absa_shadow_texts_total").items()}
    assert outcomes["refused"] == 1 and outcomes["compared"] == 1, outcomes
    assert sum(samples(text, "absa_shadow_aspects_total").values()) == 1


def test_a_batch_that_fails_is_counted_and_the_thread_goes_on(
    challenger: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An error (here an answer without its probabilities) fails its batch, counted and
    logged, and the texts queued after it are scored."""
    shadow = _shadow(challenger, rate=1.0)
    broken = _answer(TEXTS[0], "food")
    del broken[0]["scores"]
    shadow.offer([(TEXTS[0], "m:1", broken)], "x")
    shadow.start()
    deadline = time.monotonic() + 30
    while "failed on a batch" not in caplog.text:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    shadow.offer([(TEXTS[1], "m:1", _answer(TEXTS[1], "staff"))], "x")
    shadow.close()
    text = shadow.metrics.expose().decode()
    outcomes = {dict(k)["outcome"]: v for k, v in samples(text, "absa_shadow_texts_total").items()}
    assert outcomes["failed"] == 1 and outcomes["compared"] == 1, outcomes


def test_the_rate_draws_whole_requests(challenger: Path) -> None:
    """Each request is drawn once, all its texts with it: of a request of one text not
    drawn and one of two drawn, both texts of the second are scored, and only they."""
    draws = iter([0.7, 0.3])
    shadow = _shadow(challenger, rate=0.5, draw=lambda: next(draws))
    shadow.offer([(TEXTS[1], "m:1", _answer(TEXTS[1], "staff"))], "x")  # 0.7: not drawn
    shadow.offer([(t, "m:1", _answer(t, t.split()[1])) for t in (TEXTS[0], TEXTS[2])], "x")
    shadow.start()
    shadow.close()
    text = shadow.metrics.expose().decode()
    assert samples(text, "absa_shadow_texts_total")[(("outcome", "compared"),)] == 2
    assert sum(samples(text, "absa_shadow_aspects_total").values()) == 2


def test_closing_waits_at_most_its_time_and_says_what_is_left(
    challenger: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """close() scores what is queued within its time in all, and says what it left."""
    shadow = _shadow(challenger, rate=1.0)
    for _ in range(1000):
        shadow.offer([(TEXTS[0], "m:1", _answer(TEXTS[0], "food"))], "x")
    shadow.start()
    start = time.monotonic()
    with caplog.at_level(logging.WARNING):
        shadow.close(timeout=0.05)
    assert time.monotonic() - start < 1.0
    assert "texts unscored" in caplog.text


def test_shift_is_the_total_variation_distance() -> None:
    from absa.service.shadow import shift

    a = {"positive": 0.7, "negative": 0.2, "neutral": 0.1}
    assert shift(a, a) == 0
    assert shift(a, {"positive": 0.1, "negative": 0.2, "neutral": 0.7}) == pytest.approx(0.6)
    assert shift({"positive": 1.0}, {"negative": 1.0}) == 1.0
