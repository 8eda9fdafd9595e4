"""benchmarks/unknown_words.py counts words as the service's absa_words_total does."""

from __future__ import annotations

from fastapi.testclient import TestClient

from absa.model.runtime import DEFAULT_MODEL_DIR
from absa.model.text import load_pipeline
from benchmarks.unknown_words import unknown_share


def test_the_share_is_what_the_service_counts() -> None:
    """The same words, each text once, as /metrics has them after the same texts."""
    from absa.service.app import create_app
    from tests.service.conftest import make_settings
    from tests.service.test_reload import metric_samples

    texts = ["the food was zzqxv", "the food was zzqxv", "La comida estaba fría"]
    got = unknown_share(load_pipeline(DEFAULT_MODEL_DIR), texts)
    assert got["texts"] == 2 and got["unknown"] >= 2
    with TestClient(create_app(make_settings(DEFAULT_MODEL_DIR))) as c:
        for text in dict.fromkeys(texts):
            r = c.post("/v1/predict", json={"text": text, "aspects": [text[:3]]})
            assert r.status_code == 200, r.text
        counted = {
            lab["known"]: v for lab, v in metric_samples(c.get("/metrics").text, "absa_words_total")
        }
    assert counted == {"false": got["unknown"], "true": got["words"] - got["unknown"]}
