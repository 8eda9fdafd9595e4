"""Export a loaded network to an artifact directory: ONNX + JSON, checked against torch.

``export`` takes the network, its text pipeline and config, the labelled dev examples the
parity check runs on, and the provenance to record; where they come from (a training run:
``absa.training.exporting``) is not its business. The artifact's layout, metadata writing
and checks are ``absa.model.artifact``'s.

The export fails (and writes nothing at ``out_dir``) when onnxruntime and torch disagree
on the dev set by more than ``PARITY_ATOL`` in any probability or in any prediction.
``quantize="int8"`` adds onnxruntime dynamic quantisation; ``"int8-embeddings"`` quantises
the word-vector table alone (weights only: a Gather of int8 rows and their scale, so an
item's probabilities do not depend on the other items of its batch, as dynamic
quantisation's activation scales make them); the accuracy change against the fp32 graph is
measured on the same dev set and recorded in the metadata.

``calibrate`` (the default) fits a temperature T on the dev set's logits
(``absa.model.calibration``), exports ``softmax(logits / T)`` as the graph's probabilities
and checks parity against torch with T applied; the metadata's ``calibration`` records T
and the dev ECE / NLL before and after. Off, T is 1 (the probabilities of the network).
``top_map`` adds the top-label map after T (``absa.model.calibration.fit_top_map``), fitted
on the same dev split, recorded as ``calibration.top_map`` and applied by the runtime; its
dev ECE is measured out of fold. ``domain`` (``DomainSentences``: a domain's name and the
training sentences in and out of it) adds a temperature of its own for requests that read like
that domain (``absa.model.domain``), and one for the others, each fitted on its side of dev
after T and before the map: the word classifier goes into ``domain.json``, the temperatures
into ``calibration.domain``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from absa.errors import ArtifactError, ParityError
from absa.model import calibration
from absa.model.artifact import (
    KIND,
    ONNX,
    PARITY_ATOL,
    new_metadata,
    quantize_graph,
    record_checksums,
    refuse_existing,
    staged,
    write_metadata,
)
from absa.model.card import write_card
from absa.model.categories import CATEGORY, TERMS, encode_example
from absa.model.config import ModelConfig
from absa.model.domain import (
    DOMAIN_FILE,
    MIN_DEV_ITEMS,
    DomainTemperature,
    fit_temperatures,
    fit_words,
    temper,
    words_of,
)
from absa.model.graph_labels import stamp_labels
from absa.model.network import ABSANet, ExportWrapper
from absa.model.runtime import Runtime, top_map_of
from absa.model.text import Encoded, Pipeline, TextError, Token, collate

__all__ = [
    "OPSET",
    "PARITY_ATOL",
    "DomainSentences",
    "LabelledSpan",
    "ParityError",
    "domain_classifier",
    "domain_record",
    "export",
]

log = logging.getLogger(__name__)

OPSET = 17
QUANTIZATIONS = (None, "int8", "int8-embeddings")
BATCH_CHECK = 200  # dev items served one at a time to measure how answers depend on the batch


@dataclass(frozen=True)
class DomainSentences:
    """What a domain temperature is fitted from: the domain's name, training sentences (dev's
    left out) and whether each is in the domain, and the files that made it (recorded)."""

    name: str
    texts: Sequence[str]
    inside: Sequence[bool]
    files: Sequence[Mapping[str, str]] = ()


class LabelledSpan(Protocol):
    """A dev example: ``text[start:end]`` is the aspect (a category model's examples give a
    ``category`` instead), ``label`` its gold label."""

    @property
    def text(self) -> str: ...
    @property
    def label(self) -> str: ...


def export(
    net: ABSANet,
    pipeline: Pipeline,
    model_config: ModelConfig,
    dev: Sequence[LabelledSpan],
    out_dir: Path,
    provenance: Mapping[str, object],
    name: str = "absa",
    version: str | None = None,
    quantize: str | None = None,
    batch: int = 32,
    calibrate: bool = True,
    top_map: bool = False,
    domain: DomainSentences | None = None,
) -> dict:
    """Write the artifact directory and return its metadata. ``provenance`` (preset, train,
    train_config, metrics, code_version, source_run, ...) goes into the metadata as given;
    ``version`` defaults to a UTC timestamp; ``calibrate`` fits a temperature on ``dev``,
    ``top_map`` a top-label map after it (ValueError under ``TOP_MAP_MIN_DEV`` dev items),
    ``domain`` a temperature for its requests before the map (ValueError under
    ``MIN_DEV_ITEMS`` dev items read as the domain, or as many not). FileExistsError, before
    any work, where ``out_dir`` exists; ValueError for no ``dev``."""
    out_dir = Path(out_dir)
    refuse_existing(out_dir)  # staged() checks again at the end: here before any work
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be int8, int8-embeddings or absent, not {quantize!r}")
    if not dev:
        raise ValueError("no dev examples: the parity check and the temperature need some")
    if top_map and not calibrate:
        raise ValueError(
            "a top-label map needs the temperature (fitted after it): top_map without calibrate"
        )
    if domain is not None and not calibrate:
        raise ValueError("a domain temperature is fitted after the global one: not without it")
    if top_map and len(dev) < calibration.TOP_MAP_MIN_DEV:
        raise ValueError(
            f"a top-label map needs at least {calibration.TOP_MAP_MIN_DEV} dev items; the dev "
            f"split has {len(dev)}"
        )
    net = net.eval()
    items = []
    for e in dev:
        try:
            items.append(encode_example(pipeline, e, model_config.categories, model_config.pair))
        except TextError as err:  # an edited dev file: named by file and line, as a label is
            where = getattr(e, "source", "") or "the dev split"
            raise ValueError(f"{where}: {err}") from None
    labels = list(model_config.labels)
    stray = next((e for e in dev if e.label not in labels), None)
    if stray is not None:  # an edited dev file: a label the model cannot answer
        where = getattr(stray, "source", "") or "the dev split"
        raise ValueError(f"{where}: label {stray.label!r} is none of the model's {labels}")
    y = np.array([labels.index(e.label) for e in dev])
    logits = _torch_logits(net, items, pipeline.pad_id, batch)
    classifier, rows = None, None
    if domain is not None:
        classifier, rows = domain_classifier(domain, pipeline, [it.tokens for it in items])
    calib = _calibrate(logits, y, fit=calibrate, top_map=top_map, domain_rows=rows)
    served_domain = None
    if classifier is not None and domain is not None:
        served_domain = replace(
            classifier,
            temperature=calib["domain"]["temperature"],
            outside=calib["domain"]["outside_temperature"],
        )
        calib["domain"].update(domain_record(domain, served_domain))
    train = provenance.get("train")
    if calibrate:  # what /v1/model says T was fitted on, e.g. "10% of train held out with seed 1"
        split = train.get("dev_split") if isinstance(train, Mapping) else None
        calib["fitted_on"] = str(split or "dev")
    with staged(out_dir) as tmp:
        pipeline.save(tmp)
        if served_domain is not None:
            served_domain.to_file(tmp)
        _export_onnx(
            net, tmp / ONNX, bool(model_config.self_attention_heads), labels, calib["temperature"]
        )
        onnx = {"opset": OPSET, "inputs": list(net.input_names), "exported_with": export_versions()}
        cfg = model_config.to_dict()
        metadata = new_metadata(
            KIND,
            name,
            version,
            labels,
            cfg,
            provenance,
            onnx,
            task=CATEGORY if model_config.is_category else TERMS,
            categories=model_config.categories if model_config.is_category else None,
            calibration=calib,
        )
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
        ref = calibration.softmax(logits, calib["temperature"])  # torch's, with T applied
        if served_domain is not None:
            ref = served_domain.apply(ref, [it.tokens for it in items])
        if top_map:
            ref = calibration.apply_top_map(ref, calib["top_map"]["x"], calib["top_map"]["y"])
        got = _ort_probs(tmp, items, batch)
        metadata["parity"] = _check_parity(ref, got, y)
        if quantize:
            metadata["quantization"] = _quantize(tmp, metadata, items, y, got, batch, quantize)
        write_card(tmp, metadata)  # README.md, hashed with the other files
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
    return metadata


def export_versions() -> dict[str, str]:
    """The libraries that make the graph (torch's exporter, onnx) and measure the parity,
    calibration and int8 numbers the metadata records (onnxruntime): the run's environment
    (``train.environment``) is another machine's, or another day's."""
    import onnx
    import onnxruntime

    return {
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


def onnx_export(
    wrapper: torch.nn.Module,
    args: tuple[torch.Tensor, ...],
    path: Path,
    inputs: Sequence[str],
    outputs: list[str],
    axes: dict[str, dict[int, str]],
    labels: Sequence[str],
) -> None:
    """``torch.onnx.export`` at the project's opset, TorchScript exporter, no gradients;
    then ``labels``, the order of the graph's probs columns, stamped into it
    (``absa.model.graph_labels``)."""
    with torch.no_grad(), warnings.catch_warnings():
        # h0/c0 are built from the input's batch size inside the graph, and the parity check
        # runs batches of several sizes, so the exporter's batch-size warning does not apply
        warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size")
        torch.onnx.export(
            wrapper,
            args,
            str(path),
            input_names=list(inputs),
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    stamp_labels(path, labels)


def _export_onnx(
    net: ABSANet,
    path: Path,
    self_attention: bool,
    labels: Sequence[str],
    temperature: float = 1.0,
) -> None:
    """The network (with T) as an ONNX graph at ``path``, ``labels`` stamped into it."""
    wrapper = ExportWrapper(net, temperature).eval()
    net.eval()  # export what serves: no dropout
    names = net.input_names  # the third: aspect_mask (B, T) or category_ids (B,)
    category = 0 if net.cfg.is_category else None
    pair = net.cfg.pair  # then a fourth: token_type_ids (B, T)
    dummy = collate([_dummy_item(5, category, pair), _dummy_item(3, category, pair)], pad_id=0)
    args = tuple(torch.from_numpy(dummy[k]) for k in names)
    outputs = ["probs", "attention"] + (["self_attention"] if self_attention else [])
    axes = {k: {0: "batch"} if k == "category_ids" else {0: "batch", 1: "tokens"} for k in names}
    axes.update({"probs": {0: "batch"}, "attention": {0: "batch", 1: "tokens"}})
    if self_attention:
        axes["self_attention"] = {0: "batch", 2: "tokens", 3: "tokens_k"}
    onnx_export(wrapper, args, path, names, outputs, axes, labels)
    net.eval()


def _dummy_item(n: int, category: int | None, pair: bool = False) -> Encoded:
    types = [0] * (n - 1) + [1] if pair else None
    return Encoded([2] * n, [0, 1] + [0] * (n - 2), [Token("x", 0, 1)] * n, category, types)


def domain_classifier(
    domain: DomainSentences, pipeline: Pipeline, dev_tokens: Sequence[Sequence[Token]]
) -> tuple[DomainTemperature, np.ndarray]:
    """The domain's word classifier (temperatures 1 until fitted), fitted on its training
    sentences in the pipeline's tokens, and which dev items (their tokens) read as the
    domain; ValueError where under ``MIN_DEV_ITEMS`` dev items do, or do not (too few to fit
    a temperature on)."""
    words = [words_of(pipeline.tokenized(text).tokens) for text in domain.texts]
    bias, weights = fit_words(words, domain.inside)
    classifier = DomainTemperature(domain.name, bias, weights, 1.0)
    rows = classifier.logits(dev_tokens) > 0
    found = int(rows.sum())
    if min(found, len(rows) - found) < MIN_DEV_ITEMS:
        raise ValueError(
            f"a temperature for domain {domain.name!r} needs at least {MIN_DEV_ITEMS} dev items "
            f"that read as it and as many that do not; {found} of {len(rows)} read as it"
        )
    return classifier, rows


def domain_record(domain: DomainSentences, served: DomainTemperature) -> dict[str, Any]:
    """What ``calibration.domain`` says of a fitted domain temperature beside its fit: the
    temperatures, the classifier and the sentences and files it was fitted on."""
    inside = int(sum(domain.inside))
    return {
        "name": domain.name,
        "temperature": served.temperature,
        "outside_temperature": served.outside,
        "file": DOMAIN_FILE,
        "words": len(served.weights),
        "sentences": {"inside": inside, "outside": len(domain.inside) - inside},
        "files": [dict(f) for f in domain.files],
        "classifier": "logistic regression (scikit-learn, L2) of in the domain on which "
        "lower-cased words a training sentence holds (words of 2 sentences or more); dev's "
        "sentences left out; an item is in the domain where its logit is > 0",
    }


def _calibrate(
    logits: np.ndarray,
    y: np.ndarray,
    fit: bool = True,
    top_map: bool = False,
    domain_rows: np.ndarray | None = None,
) -> dict:
    """The metadata's ``calibration``: T fitted on dev (or 1); with ``domain_rows`` (the dev
    items that read as a domain) a temperature of their own and one for the others after T
    (``domain.fit_temperatures``); with ``top_map`` the top-label map after those. Dev ECE /
    NLL before and after (the map's out of fold, the temperatures in sample)."""
    t = calibration.fit_temperature(logits, y) if fit else 1.0
    knots = None
    served = None
    scaled = calibration.softmax(logits, t)
    domain = None
    if domain_rows is not None:
        inside = scaled[domain_rows]
        r, r_out = fit_temperatures(logits, y, domain_rows, t)
        scaled = temper(temper(scaled, domain_rows, r), ~domain_rows, r_out)
        served = scaled
        ece = calibration.expected_calibration_error
        domain = {
            "temperature": r,
            "outside_temperature": r_out,
            "objective": "dev NLL of each side (the domain's items, the others), L-BFGS on "
            "log(T t), t relative to T",
            "dev_items": int(domain_rows.sum()),
            "dev_ece_before": ece(inside, y[domain_rows]),
            "dev_ece_after": ece(scaled[domain_rows], y[domain_rows]),
        }
        log.info(
            "domain temperature %.4f on %d dev items: their ECE %.4f -> %.4f (before any map)",
            r,
            domain["dev_items"],
            domain["dev_ece_before"],
            domain["dev_ece_after"],
        )
    if top_map:
        knots = calibration.fit_top_map(scaled, y)
        served = calibration.out_of_fold_top_map(scaled, y)
    dev = calibration.calibration_report(logits, y, t, served=served)
    log.info(
        "temperature %.4f%s: dev ECE (%d bins) %.4f -> %.4f, NLL %.4f -> %.4f",
        t,
        "" if fit else " (not fitted)",
        calibration.ECE_BINS,
        dev["ece_before"],
        dev["ece_after"],
        dev["nll_before"],
        dev["nll_after"],
    )
    out: dict[str, Any] = {
        "method": "temperature",
        "temperature": t,
        "fitted": fit,
        **({"objective": "dev NLL, L-BFGS on log T"} if fit else {}),  # none: nothing fitted
        "bins": calibration.ECE_BINS,
        "dev": dev,
    }
    caveat = calibration.temperature_caveat(logits, y, t) if fit else None
    if caveat:
        out["caveat"] = caveat
    if domain is not None:
        out["method"] = "temperature+domain"
        out["domain"] = domain
    if knots is not None:
        log.info(
            "top-label map: %d knots; dev ECE %.4f -> %.4f (out of %d folds)",
            len(knots[0]),
            dev["ece_temperature"],
            dev["ece_after"],
            calibration.CROSS_FOLDS,
        )
        out["method"] += "+top_map"
        out["top_map"] = {
            "x": knots[0].tolist(),
            "y": knots[1].tolist(),
            "fit": "isotonic regression of top-class correctness on the top probability "
            "after T (scikit-learn), knots at block centres",
            "dev_ece": f"out of {calibration.CROSS_FOLDS} folds, seed 0",
        }
    return out


def _torch_logits(net: ABSANet, items: Sequence[Encoded], pad_id: int, batch: int) -> np.ndarray:
    """The network's logits (N, C) on the items, in padded batches as served."""
    out = []
    with torch.no_grad():
        for s in range(0, len(items), batch):
            feeds = {
                k: torch.from_numpy(v) for k, v in collate(items[s : s + batch], pad_id).items()
            }
            out.append(net(**feeds)[0].numpy())
    return np.concatenate(out)


def _ort_probs(
    directory: Path, items: Sequence[Encoded], batch: int, mapped: bool = True
) -> np.ndarray:
    """onnxruntime's probabilities on the artifact being built (its parity not yet recorded);
    ``mapped`` False: before a top-label map (after T and a domain's temperature)."""
    rt = Runtime.load(directory, device="cpu", require_parity=False, task=None)
    if not mapped:
        rt.top_map = None
    return np.concatenate(
        [
            np.stack([o.probs for o in rt.run_batch(items[s : s + batch])])
            for s in range(0, len(items), batch)
        ]
    )


def _batch_dependence(directory: Path, items: Sequence[Encoded], batched: np.ndarray) -> float:
    """How far the probabilities of ``items`` served one at a time are from the same items'
    served in batches (``batched``, in order)."""
    if not items:
        return 0.0
    alone = _ort_probs(directory, items, 1)
    return float(np.abs(alone - batched[: len(items)]).max())


def _check_parity(ref: np.ndarray, got: np.ndarray, y: np.ndarray) -> dict:
    """torch (``ref``) vs onnxruntime (``got``) on the dev set, in padded batches: the record
    for the metadata, or ParityError."""
    diff = float(np.abs(ref - got).max())
    mismatches = int((ref.argmax(1) != got.argmax(1)).sum())
    log.info(
        "parity on %d dev items: max |diff| %.2e, %d prediction mismatches",
        len(ref),
        diff,
        mismatches,
    )
    if not diff <= PARITY_ATOL or mismatches:  # "not <=": a NaN fails too
        raise ParityError(
            f"onnxruntime and torch disagree on the dev set: max |diff| {diff:.2e} "
            f"(limit {PARITY_ATOL:.0e}), {mismatches} predictions differ; nothing exported"
        )
    return {
        "n": len(ref),
        "max_abs_diff": diff,
        "prediction_mismatches": mismatches,
        "atol": PARITY_ATOL,
        # the exported network's own dev scores: ``metrics`` holds the run's, which differ
        # where export changed the network (a vocabulary expansion: 1.8.0, 77.68 -> 78.11)
        "dev_accuracy_torch": float((ref.argmax(1) == y).mean()),
        "dev_accuracy_onnx": float((got.argmax(1) == y).mean()),
        "dev_macro_f1_onnx": _macro_f1(y, got.argmax(1), got.shape[1]),
    }


def _macro_f1(y: np.ndarray, pred: np.ndarray, k: int) -> float:
    """Macro-F1 of ``pred`` against ``y`` over the ``k`` classes that ``y`` holds (as
    training's metrics count it). Not absa.training.metrics: model/ imports nothing from
    training/ (test_export_needs_no_training_code); a test checks the two agree."""
    conf = np.zeros((k, k), dtype=np.int64)
    np.add.at(conf, (y, pred), 1)
    tp = np.diag(conf).astype(np.float64)
    denom = conf.sum(0) + conf.sum(1)  # 2 tp + fp + fn
    held = conf.sum(1) > 0  # the classes gold at least once
    return float(np.mean(2 * tp[held] / denom[held])) if held.any() else 0.0


#: what int8 may change on dev against the fp32 graph (which passed the parity check): the
#: served graph is the int8 one, so it is gated too (1.8.0: 0.00 points, 10 of 2,330)
QUANT_MAX_ACCURACY_DROP = 0.005  # accuracy, as a share (half a point)
QUANT_MAX_CHANGED = 0.02  # the share of dev predictions that may change
QUANT_ANY_CHANGED = 2  # ... or this many, whatever the share (a dev set of a few dozen)


def check_quantization(info: Mapping[str, Any], n: int) -> None:
    """ParityError (nothing exported) when the int8 graph costs more than the budget: more
    dev predictions changed than ``QUANT_MAX_CHANGED`` of them (or ``QUANT_ANY_CHANGED``),
    or dev accuracy down by more than ``QUANT_MAX_ACCURACY_DROP`` (or that many items)."""
    changed = int(info["changed_predictions"])
    drop = -float(info["accuracy_change"])
    max_changed = max(QUANT_MAX_CHANGED * n, QUANT_ANY_CHANGED)
    max_drop = max(QUANT_MAX_ACCURACY_DROP, QUANT_ANY_CHANGED / max(n, 1))
    if changed > max_changed or drop > max_drop + 1e-12:
        # what is still worth trying: the word table alone is no option once it has failed
        tables = info["type"] == "int8-embeddings"
        rest = "" if tables else ", or with int8-embeddings (the word table alone)"
        raise ParityError(
            f"{info['type']} quantisation changes {changed} of {n} dev predictions (at most "
            f"{max_changed:.0f}) and dev accuracy by {-drop * 100:+.2f} points (at least "
            f"{-max_drop * 100:.2f}); nothing exported: export without --quantize{rest}"
        )


def word_table_gathers(path: Path) -> list[str]:
    """The names of the graph's Gather nodes that look up ``input_ids``: the word (or word
    piece) table, which int8-embeddings quantises alone (a category model's category vectors,
    a transformer's position and token-type tables stay fp32)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    names = [n.name for n in graph.node if n.op_type == "Gather" and n.input[1] == "input_ids"]
    if not names or not all(names):
        raise ArtifactError(f"{path}: no named Gather of input_ids (the word table) to quantise")
    return names


def _quantize(
    tmp: Path,
    metadata: dict,
    items: Sequence[Encoded],
    y: np.ndarray,
    fp32_probs: np.ndarray,
    batch: int,
    kind: str = "int8",
) -> dict:
    """Replace model.onnx by its int8 quantisation (``kind``: every weight, dynamic; or the
    word-vector table alone); what that changes on dev."""
    tables = kind == "int8-embeddings"
    nodes = word_table_gathers(tmp / ONNX) if tables else None
    size_fp32 = quantize_graph(tmp, metadata, op_types=["Gather"] if tables else None, nodes=nodes)
    pre = _ort_probs(tmp, items, batch, mapped=False)  # after T (and a domain's), no map
    knots = top_map_of(metadata, tmp)
    got = pre if knots is None else calibration.apply_top_map(pre, *knots)  # as served
    acc32 = float((fp32_probs.argmax(1) == y).mean())
    acc8 = float((got.argmax(1) == y).mean())
    info: dict[str, Any] = {  # a JSON record: numbers and names
        "type": "int8-embeddings" if tables else "int8-dynamic",
        "dev_accuracy_fp32": acc32,
        "dev_accuracy_int8": acc8,
        "dev_macro_f1_int8": _macro_f1(y, got.argmax(1), got.shape[1]),
        "accuracy_change": acc8 - acc32,
        "changed_predictions": int((got.argmax(1) != fp32_probs.argmax(1)).sum()),
        "max_abs_prob_diff": float(np.abs(got - fp32_probs).max()),
        # the served graph's dev ECE (calibration.dev is the fp32 graph's, where T was fitted);
        # with a top-label map, in sample: the map was fitted on these very items
        "dev_ece_int8": calibration.expected_calibration_error(got, y),
        "bytes_fp32": size_fp32,
        "bytes_int8": (tmp / ONNX).stat().st_size,
        # dynamic int8 scales each activation over the whole batch: an item's answer can
        # depend on the items served beside it (the server batches concurrent requests)
        "max_abs_batch_dependence": _batch_dependence(tmp, items[:BATCH_CHECK], got),
    }
    check_quantization(info, len(y))  # the graph served: refused beyond the budget
    if knots is not None:  # comparable with calibration.dev.ece_after
        info["dev_ece_int8_out_of_fold"] = calibration.expected_calibration_error(
            calibration.out_of_fold_top_map(pre, y), y
        )
    if info["max_abs_batch_dependence"] > 1e-4:
        log.warning(
            "int8: an item's probabilities change by up to %.3f with the batch it is served "
            "in (dynamic activation scales); int8-embeddings does not",
            info["max_abs_batch_dependence"],
        )
    log.info(
        "int8: dev accuracy %.4f -> %.4f, %d predictions change",
        acc32,
        acc8,
        info["changed_predictions"],
    )
    return info
