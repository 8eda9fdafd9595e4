"""absa.model.predictor: resolve -> encode -> forward -> postprocess, limits and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from absa.errors import ArtifactError, InputError, LimitError
from absa.model.aspects import Span
from absa.model.predictor import Limits, Predictor
from absa.model.runtime import DEFAULT_MODEL_DIR, Runtime

TEXT = "The fries were soggy but the burger was great"


@pytest.fixture(scope="module")
def predictor() -> Predictor:
    return Predictor(Runtime.load(DEFAULT_MODEL_DIR, device="cpu", threads=1))


def test_resolve_terms_every_occurrence_and_pinned_spans(predictor: Predictor) -> None:
    text = "pizza here, Pizza there"
    assert predictor.resolve(text, ["pizza"]) == [Span("pizza", 0, 5), Span("Pizza", 12, 17)]
    pinned = {"term": "Pizza", "start": 12, "end": 17}
    assert predictor.resolve(text, [pinned]) == [Span("Pizza", 12, 17)]
    assert predictor.resolve(text, [Span("Pizza", 12, 17)]) == [Span("Pizza", 12, 17)]


def test_a_span_asked_for_twice_is_answered_once(predictor: Predictor) -> None:
    """["burger", "burger"] gave every occurrence twice, each with its own answer."""
    text = "The burger was great and the Burger bun was soggy"
    both = [Span("burger", 4, 10), Span("Burger", 29, 35)]
    assert predictor.resolve(text, ["burger", "burger"]) == both
    assert predictor.resolve(text, ["burger", "Burger"]) == both
    pinned = {"term": "Burger", "start": 29, "end": 35}
    assert predictor.resolve(text, [pinned, "burger"]) == both[::-1]  # where first asked
    results = predictor(text, ["burger", "burger"])
    assert [(r.start, r.end) for r in results] == [(4, 10), (29, 35)]


@pytest.mark.parametrize(
    ("text", "aspects", "message"),
    [
        ("  ", ["x"], "text is empty"),
        (TEXT, [], "aspects is empty"),
        (TEXT, ["wine"], "aspects[0]: aspect 'wine' does not occur in the text"),
        (TEXT, ["fries", " "], "aspects[1]: the aspect is empty"),
        (TEXT, [{"term": "fries", "start": 0, "end": 3}], "text[0:3] is 'The', not the term"),
        (TEXT, [{"term": "fries", "start": 40, "end": 99}], "span [40, 99) is outside the text"),
        (TEXT, [{"term": "fries", "start": 4, "end": 4}], "span [4, 4) is empty: end must be"),
        (TEXT, [{"term": "fries", "start": 9, "end": 4}], "span [9, 4) is empty: end must be"),
        (TEXT, [{"term": "fries"}], "needs term, start and end"),
        (TEXT, [3], "a term (str) or a span"),
    ],
)
def test_bad_input_is_an_input_error_that_says_what(
    predictor: Predictor, text: str, aspects: list, message: str
) -> None:
    with pytest.raises(InputError) as err:
        predictor(text, aspects)
    assert message in str(err.value)


def test_limits_raise_limit_errors() -> None:
    rt = Runtime.load(DEFAULT_MODEL_DIR, device="cpu", threads=1)
    p = Predictor(rt, Limits(max_text_chars=20, max_aspects=2))
    with pytest.raises(LimitError, match="limit is 20"):
        p(TEXT, ["fries"])
    with pytest.raises(LimitError, match="too many aspects"):
        p("a b a b a", ["a", "b"])
    assert len(p("a b a", ["a"])) == 2  # within both limits
    assert len(p("a b c", ["a", "b"])) == 2  # as many listed as the limit
    with pytest.raises(LimitError, match=r"\(3 listed; the limit is 2\)"):
        p("a b c", ["a", "b", "c"])  # one listed too many, refused before any lookup


def test_results_label_score_scores_and_explain(predictor: Predictor) -> None:
    burger, fries = predictor(TEXT, ["burger", "fries"], explain=True)
    assert (burger.term, burger.span, fries.span) == ("burger", (29, 35), (4, 9))
    for r in (burger, fries):
        assert r.label == max(r.scores, key=r.scores.get)
        assert r.score == r.scores[r.label]
        assert abs(sum(r.scores.values()) - 1) < 1e-4
        assert r.attention is not None
        assert [w.token for w in r.attention] == TEXT.split()
        assert abs(sum(w.weight for w in r.attention) - 1) < 1e-4
    assert (burger.label, fries.label) == ("positive", "negative")
    plain = predictor(TEXT, ["burger"])[0]
    assert plain.attention is None and "attention" not in plain.to_dict()
    assert plain.scores == burger.scores


def test_predict_many_equals_one_by_one(predictor: Predictor) -> None:
    reqs = [(TEXT, ["burger", "fries"]), ("The food was great", ["food"]), (TEXT, ["fries"])]
    prepared = [predictor.preprocess(t, a) for t, a in reqs]
    together = predictor.predict_many(prepared)
    alone = [predictor(t, a) for t, a in reqs]
    for x, y in zip(together, alone, strict=True):
        np.testing.assert_allclose(
            [list(r.scores.values()) for r in x], [list(r.scores.values()) for r in y], atol=1e-6
        )


def test_explain_marks_words_the_vocabulary_does_not_know(predictor: Predictor) -> None:
    (r,) = predictor("The zxqvw food was great", ["food"], explain=True)
    assert r.attention is not None
    assert {w.token: w.oov for w in r.attention} == {
        "The": False,
        "zxqvw": True,
        "food": False,
        "was": False,
        "great": False,
    }
    assert r.to_dict()["attention"][1]["oov"] is True


@pytest.mark.parametrize(
    ("aspects", "message"),
    [
        (["fries", {"term": "fries"}], "aspects[1]: an aspect span needs term, start and end"),
        (["fries", 3], "aspects[1]: an aspect is a term (str) or a span"),
    ],
)
def test_an_aspect_that_is_no_span_is_named_by_its_index(
    predictor: Predictor, aspects: list, message: str
) -> None:
    """Every other aspect error says which aspect; these two said nothing of where."""
    with pytest.raises(InputError) as err:
        predictor(TEXT, aspects)
    assert message in str(err.value)


def test_a_bare_term_is_one_aspect_not_its_letters(predictor: Predictor) -> None:
    """A str is a Sequence: "burger" was read as the aspects "b", "u", "r", ..., each found
    inside other words, and answered with a result per letter."""
    assert predictor(TEXT, "burger") == predictor(TEXT, ["burger"])


@pytest.mark.filterwarnings("ignore:Specified provider")  # onnxruntime's, on the fallback
def test_cuda_in_any_case_is_refused_where_the_session_falls_back_to_the_cpu(
    artifact: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime-gpu lists CUDA on a machine where it cannot start it, then runs on the
    CPU: "cuda" was refused, but "CUDA" (devices are case-insensitive) served on the CPU.
    onnxruntime's own listing is what is faked here; the session is real and falls back."""
    import onnxruntime as ort

    monkeypatch.setattr(
        ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    for device in ("cuda", "CUDA", "Cuda"):
        with pytest.raises(ArtifactError, match="no usable GPU"):
            Runtime.load(artifact, device=device, threads=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"device": "gpu"}, "device must be auto, cpu or cuda, not 'gpu'"),
        ({"device": None}, "device must be auto, cpu or cuda, not None"),
        ({"threads": -1}, "threads must be a whole number >= 0 (0: chosen from the CPUs)"),
        ({"threads": "2"}, "threads must be a whole number >= 0"),
        ({"threads": 1.5}, "threads must be a whole number >= 0"),
    ],
)
def test_a_bad_device_or_thread_count_is_an_input_error(
    artifact: Path, kwargs: dict, message: str
) -> None:
    """None and a str thread count were AttributeError / TypeError, -1 was taken silently."""
    with pytest.raises(InputError) as err:
        Runtime.load(artifact, **kwargs)
    assert message in str(err.value)


def test_max_batch_below_one_is_refused_at_load(artifact: Path) -> None:
    """It was taken, and every request then failed inside range() with a zero step."""
    with pytest.raises(InputError, match="max_batch must be at least 1"):
        Runtime.load(artifact, max_batch=0)


def test_run_takes_a_batch_size_of_its_own(artifact: Path) -> None:
    """``Classifier.batch(batch_size=...)`` promises that many aspects per onnxruntime call:
    the runtime's max_batch capped it at 64."""
    rt = Runtime.load(artifact, device="cpu", threads=1, max_batch=4)
    sizes: list[int] = []
    session = rt.session

    class Counting:  # onnxruntime's session, its calls counted
        def run(self, names: list[str], feed: dict) -> list:
            sizes.append(len(feed["input_ids"]))
            return session.run(names, feed)

    rt.session = Counting()
    items = [rt.encode("the food was great", 4, 8)] * 10
    alone = rt.run(items)
    assert sizes == [4, 4, 2]
    sizes.clear()
    together = rt.run(items, max_batch=10)
    assert sizes == [10]
    np.testing.assert_allclose([o.probs for o in together], [o.probs for o in alone], atol=1e-6)
    with pytest.raises(InputError, match="max_batch must be at least 1"):
        rt.run(items, max_batch=0)


def test_an_extracted_aspect_over_the_window_is_left_out_not_a_422() -> None:
    """An aspect of more tokens than the model reads at once is refused when named (a 422);
    one the extractor found must not fail the whole request: it is left out, as a term over
    200 characters is. The shipped pipeline's window is set to 1 token here, so the
    two-word "battery life" is over it and "screen" is not."""
    from absa.model.extractor import DEFAULT_EXTRACTOR_DIR, Extractor

    rt = Runtime.load(DEFAULT_MODEL_DIR, device="cpu", threads=1)
    ext = Extractor.load(DEFAULT_EXTRACTOR_DIR, device="cpu")
    text = "The battery life is short but the screen is bright"
    found = {s.term for s in Predictor(rt, extractor=ext).extract(text)}
    assert {"battery life", "screen"} <= found
    rt.pipeline.max_len = 1
    assert {s.term for s in Predictor(rt, extractor=ext).extract(text)} == found - {"battery life"}
