"""A category model exported and served: the artifact records its task and categories, the
graph takes ``category_ids`` (named, any batch size), onnxruntime answers as torch does and
by the category asked, and neither kind of model is ever served as the other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from absa.errors import ArtifactError, InputError, LimitError
from absa.model import artifact
from absa.model.category_predictor import CategoryPredictor
from absa.model.predictor import Limits, Predictor
from absa.model.runtime import Runtime
from absa.model.text import collate
from absa.training.inference import encode_all, to_tensors
from absa.training.rundir import load_run
from tests.helpers import CATEGORY_TERMS, category_examples

EXAMPLES = category_examples()
CATEGORIES = sorted(CATEGORY_TERMS)


@pytest.fixture(scope="module")
def runtime(category_artifact: Path) -> Runtime:
    return Runtime.load(category_artifact, device="cpu", threads=1, task="category")


def test_the_artifact_records_its_task_and_categories(category_artifact: Path) -> None:
    meta = artifact.load(category_artifact).metadata
    assert meta["task"] == "category" and meta["categories"] == CATEGORIES
    assert meta["model_config"]["categories"] == CATEGORIES
    assert meta["onnx"]["inputs"] == ["input_ids", "attention_mask", "category_ids"]
    assert meta["parity"]["prediction_mismatches"] == 0
    graph = onnx.load(str(category_artifact / "model.onnx")).graph
    dims = {
        i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
        for i in graph.input
    }
    assert dims == {
        "input_ids": ["batch", "tokens"],
        "attention_mask": ["batch", "tokens"],
        "category_ids": ["batch"],
    }
    assert "aspect-category" in (category_artifact / "README.md").read_text()


def test_onnxruntime_answers_as_torch_does(category_run: Path, runtime: Runtime) -> None:
    run = load_run(category_run)
    items = encode_all(run.pipeline, EXAMPLES, run.model_config.categories)
    with torch.no_grad():
        logits, _, _ = run.net(**to_tensors(items, run.pipeline.pad_id))
    t = runtime.metadata["calibration"]["temperature"]  # the graph serves softmax(logits / T)
    ref = torch.softmax(logits / t, -1).numpy()
    got = np.stack([o.probs for o in runtime.run(items)])  # batches of mixed lengths
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_the_answer_follows_the_category_asked(runtime: Runtime) -> None:
    """Each sentence is asked about two categories with different labels: only a graph fed
    the category (not the sentence, not a constant) in its third input gets them all."""
    p = CategoryPredictor(runtime)
    got = [p(e.text, [e.category])[0].label for e in EXAMPLES]
    assert got == [e.label for e in EXAMPLES]
    # and the same item with another id changes the answer
    a = runtime.encode_category(EXAMPLES[0].text, CATEGORIES.index(EXAMPLES[0].category))
    b = runtime.encode_category(EXAMPLES[1].text, CATEGORIES.index(EXAMPLES[1].category))
    pa, pb = (o.probs for o in runtime.run_batch([a, b]))
    assert pa.argmax() != pb.argmax()


def test_a_category_model_is_never_served_as_a_term_model(
    category_artifact: Path, artifact: Path
) -> None:
    with pytest.raises(ArtifactError, match="aspect-category model .* ABSA_CATEGORY_MODEL"):
        Runtime.load(category_artifact, device="cpu")  # what every term path loads
    with pytest.raises(ArtifactError, match="is an aspect-term model"):
        Runtime.load(artifact, device="cpu", task="category")
    with pytest.raises(ArtifactError, match="not an aspect-category model"):
        CategoryPredictor(Runtime.load(artifact, device="cpu"))


def test_a_term_item_is_refused_by_a_category_graph(runtime: Runtime) -> None:
    term_item = runtime.encode("the pizza was great", 4, 9)
    with pytest.raises(ValueError, match="category_ids"):
        runtime.run_batch([term_item])
    with pytest.raises(ValueError, match="mixes"):
        collate([term_item, runtime.encode_category("the pizza was great", 0)])


def test_predictions_and_explain(runtime: Runtime) -> None:
    first, second = EXAMPLES[0], EXAMPLES[1]  # one sentence, two categories
    text = first.text
    a, b = CategoryPredictor(runtime)(text, [first.category, second.category], explain=True)
    assert (a.category, a.label, b.category, b.label) == (
        first.category,
        first.label,
        second.category,
        second.label,
    )
    assert a.score == max(a.scores.values())
    assert sum(a.scores.values()) == pytest.approx(1, abs=1e-5)
    words = [w.token for w in a.attention or []]
    assert words == text.split()
    assert sum(w.weight for w in a.attention or []) == pytest.approx(1.0, abs=1e-4)
    d = b.to_dict()
    assert set(d) == {"category", "label", "score", "scores", "attention"}


@pytest.mark.parametrize(
    ("text", "categories", "error", "match"),
    [
        (
            "the pizza was great",
            ["drinks"],
            InputError,
            r"unknown category 'drinks'; known: ambience, food, service",
        ),
        ("the pizza was great", [], InputError, "name at least one"),
        ("the pizza was great", "food", InputError, "in a list"),
        ("   ", ["food"], InputError, "text is empty"),
        ("x" * 50, ["food"], LimitError, "the limit is 40"),
        ("the pizza was great", ["food", "service", "ambience"], LimitError, "too many categories"),
    ],
)
def test_bad_input(
    runtime: Runtime, text: str, categories: object, error: type, match: str
) -> None:
    p = CategoryPredictor(runtime, Limits(max_text_chars=40, max_aspects=2))
    with pytest.raises(error, match=match):
        p(text, categories)  # type: ignore[arg-type]


def test_a_term_predictor_still_serves_term_models(artifact: Path) -> None:
    p = Predictor(Runtime.load(artifact, device="cpu"))
    assert p("the food was great", ["food"])[0].term == "food"


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_int8_embeddings_leaves_the_category_vectors_alone(
    category_run: Path, tmp_path: Path
) -> None:
    """``--quantize int8-embeddings`` is the word-vector table alone (--help, README): it
    quantised every Gather, the category vectors' too."""
    from absa.training.exporting import export_run

    out = tmp_path / "q"
    meta = export_run(
        category_run, out, name="categories", version="q1", quantize="int8-embeddings"
    )
    assert meta["quantization"]["type"] == "int8-embeddings"
    cfg = load_run(category_run).model_config
    graph = onnx.load(str(out / "model.onnx")).graph
    eight_bit = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    int8 = [list(i.dims) for i in graph.initializer if i.data_type in eight_bit and i.dims]
    assert int8 == [[cfg.vocab_size, cfg.embed_dim]]  # the word table, and nothing else
    float32 = [list(i.dims) for i in graph.initializer if i.data_type == onnx.TensorProto.FLOAT]
    assert any(len(d) == 2 and d[0] == len(CATEGORIES) for d in float32)  # v_a, in fp32
