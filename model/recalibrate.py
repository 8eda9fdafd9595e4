"""Temperature scaling for an artifact without its training run (the shipped default, or any
term artifact exported before calibration, int8 too; a category model is refused): fit T on
the graph's own logits and write a new version of the artifact with ``Div(logits, T)``
inserted before the graph's softmax.

Export (``absa.model.export``) puts T into the graph when it has the network; here only
the ONNX graph is left, so the division is added to it with ``onnx``. The new graph is
checked against the old graph's logits divided by T (``calibration.graph_check`` in the
metadata: at most ``PARITY_ATOL`` apart and no prediction changed); the torch/onnxruntime
parity the old artifact recorded still holds for the logits. Needs the train extra (onnx,
and torch for the fit).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from absa.errors import ArtifactError, ParityError
from absa.model import artifact, calibration
from absa.model.artifact import ONNX, PARITY_ATOL, record_checksums, write_metadata
from absa.model.card import write_card
from absa.model.categories import TERMS, task_of
from absa.model.domain import fit_temperatures
from absa.model.export import DomainSentences, domain_classifier, domain_record
from absa.model.runtime import Runtime, batches_by_length
from absa.model.text import collate

log = logging.getLogger(__name__)

PROBS = "probs"  # the graph output the temperature goes in front of
T_INIT = "temperature"  # the initializer holding T
Span = tuple[str, int, int]  # (text, start, end) of an aspect
RECALIBRATING = ".recalibrate-"  # the prefix of its temporary directory, beside dst
BATCH = 64  # the reference logits and the check's runtime batch alike (dynamic int8)


def temperature_of(metadata: Mapping) -> float:
    """The temperature an artifact's graph applies: 1 when its metadata records none."""
    cal = metadata.get("calibration")
    return float(cal.get("temperature", 1.0)) if isinstance(cal, Mapping) else 1.0


def _softmax(graph: onnx.GraphProto) -> tuple[int, onnx.NodeProto]:
    """The node that computes ``probs`` and its index: a Softmax over the last axis."""
    for i, node in enumerate(graph.node):
        if PROBS in node.output:
            axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
            if node.op_type != "Softmax" or axis not in (-1, 1):
                raise ArtifactError(
                    f"'{PROBS}' comes from {node.op_type} (axis {axis}), not Softmax"
                )
            return i, node
    raise ArtifactError(f"the graph has no '{PROBS}' output")


def logits(directory: Path | str, spans: Sequence[Span], batch: int = BATCH) -> np.ndarray:
    """The artifact's logits (N, C) before its temperature: the softmax input of its graph
    (exposed as an extra output of an in-memory copy) times the recorded T. Batched as
    ``Runtime.run`` batches (by length, ``batch`` at a time: the runtime's default),
    so that a dynamic int8 graph, whose activation scales depend on the batch, gives the
    numbers the runtime serves."""
    import onnxruntime as ort

    art = artifact.load(directory)
    model = onnx.load(str(art.onnx_path))
    _, node = _softmax(model.graph)
    model.graph.output.append(helper.make_tensor_value_info(node.input[0], TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), opts, ["CPUExecutionProvider"])
    items = [art.pipeline.encode(*s) for s in spans]
    z = np.zeros((len(items), len(art.labels)), np.float32)
    for idx in batches_by_length(items, batch):
        feeds = collate([items[i] for i in idx], art.pipeline.pad_id)
        z[idx] = session.run([node.input[0]], feeds)[0]
    return z * temperature_of(art.metadata)


def with_temperature(model: onnx.ModelProto, temperature: float) -> onnx.ModelProto:
    """A copy of ``model`` whose ``probs`` are softmax(logits / temperature)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    if any(init.name == T_INIT for init in graph.initializer):
        raise ArtifactError("the graph already has a temperature")
    index, node = _softmax(graph)
    scaled = node.input[0] + "_over_temperature"
    graph.initializer.append(numpy_helper.from_array(np.array(temperature, np.float32), T_INIT))
    div = helper.make_node("Div", [node.input[0], T_INIT], [scaled], name="TemperatureScaling")
    node.input[0] = scaled
    graph.node.insert(index, div)  # before the softmax: the node list stays topologically sorted
    onnx.checker.check_model(model)
    return model


def recalibrate(
    src: Path | str,
    dst: Path | str,
    dev: Sequence[Span],
    dev_labels: Sequence[str],
    version: str,
    fitted_on: str = "dev",
) -> dict:
    """Fit T on ``dev`` (spans and gold labels) with ``src``'s logits and write ``src`` with
    the temperature in its graph to the new directory ``dst`` as ``version``; returns its
    metadata. ``fitted_on`` says in the metadata what the dev set is. A term model only (an
    ArtifactError for a category model); ``dst``'s folder must exist."""
    src, dst = Path(src), Path(dst)
    art = artifact.load(src)
    if task_of(art.metadata) != TERMS:  # its items are (text, category), not spans
        raise ArtifactError(
            f"{src}: a category model; recalibrate takes a term model (aspect spans): export "
            "the category run again with its temperature (absa export without --no-calibrate)"
        )
    if temperature_of(art.metadata) != 1.0:
        raise ArtifactError(f"{src}: already calibrated (T = {temperature_of(art.metadata)})")
    if dst.exists():
        raise FileExistsError(f"{dst} exists; write into a new directory")
    if not dst.parent.is_dir():
        raise FileNotFoundError(f"{dst.parent}: no such folder to write {dst.name} in")
    if len(dev) != len(dev_labels):
        raise ValueError(f"{len(dev)} dev spans but {len(dev_labels)} labels: one each")
    unknown = sorted(set(dev_labels) - set(art.labels))
    if unknown:
        raise ValueError(f"dev labels {unknown} are not {src}'s labels ({', '.join(art.labels)})")
    y = np.array([art.labels.index(label) for label in dev_labels])
    z = logits(src, dev, BATCH)
    t = calibration.fit_temperature(z, y)
    # held while it runs: a killed one leaves it for the next one to remove
    with artifact.held_temporary(dst.parent, RECALIBRATING, "a recalibration") as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True)
        tmp.chmod(0o755)
        onnx.save(with_temperature(onnx.load(str(art.onnx_path)), t), str(tmp / ONNX))
        metadata = _reissued(
            art.metadata,
            version,
            {
                "method": "temperature",
                "temperature": t,
                "fitted": True,
                "objective": "dev NLL, L-BFGS on log T",
                "fitted_on": fitted_on,
                "bins": calibration.ECE_BINS,
                "dev": calibration.calibration_report(z, y, t),
            },
        )
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
        got = Runtime.load(tmp, device="cpu", threads=1, max_batch=BATCH).predict_proba(dev)
        metadata["calibration"]["graph_check"] = _graph_check(calibration.softmax(z, t), got)
        write_card(tmp, metadata)
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
        tmp.rename(dst)
    return metadata


def _reissued(old: Mapping, version: str, cal: dict) -> dict:
    """``old``'s metadata as ``version`` with calibration ``cal``, saying where it came
    from; an int8 record loses what was measured at the old calibration."""
    metadata = dict(old)
    metadata.update(
        version=version,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        recalibrated_from={"version": old.get("version"), **old["onnx"]},
        # what an int8 graph changes was measured at the old T: not this graph's numbers
        quantization=_quantization_at_new_t(old.get("quantization")),
        calibration=cal,
    )
    return metadata


def _quantization_at_new_t(quant: object) -> dict | None:
    """An int8 graph's record without what was measured at the old temperature (its
    probability differences and dev ECE): kept are its kind, sizes and predictions (T
    changes no prediction)."""
    if not isinstance(quant, dict):
        return None
    stale = ("max_abs_prob_diff", "dev_ece_int8", "max_abs_batch_dependence")
    return {k: v for k, v in quant.items() if k not in stale}


def _graph_check(ref: np.ndarray, got: np.ndarray) -> dict:
    """The new graph (``got``) against the old graph's logits / T (``ref``) on dev."""
    diff = float(np.abs(ref - got).max()) if len(ref) else 0.0
    changed = int((ref.argmax(1) != got.argmax(1)).sum())
    if not diff <= PARITY_ATOL or changed:  # NaN is never within the limit
        raise ParityError(
            f"the recalibrated graph differs from logits / T: max |diff| {diff:.2e} "
            f"(limit {PARITY_ATOL:.0e}), {changed} predictions; nothing written"
        )
    log.info("recalibrated graph vs logits / T on %d dev items: max |diff| %.2e", len(ref), diff)
    return {"n": len(ref), "max_abs_diff": diff, "prediction_mismatches": changed}


def with_domain(
    src: Path | str,
    dst: Path | str,
    dev: Sequence[Span],
    dev_labels: Sequence[str],
    domain: DomainSentences,
    version: str,
    fitted_on: str = "dev",
) -> dict:
    """``src`` (a calibrated term artifact; its graph and T kept) written to the new ``dst``
    as ``version`` with a domain's temperature (``absa.model.domain``): the word classifier
    fitted on ``domain``'s sentences, the domain's temperature and the others' fitted on the
    graph's own ``dev`` logits, then the top-label map fitted again where ``src`` has one.
    Checked: the new artifact serves those probabilities on dev and changes no answer."""
    src, dst = Path(src), Path(dst)
    art = artifact.load(src)
    cal = art.metadata.get("calibration")
    if task_of(art.metadata) != TERMS or not isinstance(cal, Mapping) or "domain" in cal:
        raise ArtifactError(
            f"{src}: a calibrated term model without a domain's temperature, please"
        )
    if dst.exists():
        raise FileExistsError(f"{dst} exists; write into a new directory")
    y = np.array([art.labels.index(label) for label in dev_labels])
    z, t = logits(src, dev, BATCH), temperature_of(art.metadata)
    tokens = [art.pipeline.encode(*s).tokens for s in dev]
    classifier, rows = domain_classifier(domain, art.pipeline, tokens)
    r, r_out = fit_temperatures(z, y, rows, t)
    dom = replace(classifier, temperature=r, outside=r_out)
    before = calibration.softmax(z, t)
    probs = tempered = dom.apply(before, tokens)
    new_cal = {k: v for k, v in cal.items() if k not in ("test", "top_map", "dev")}
    served = probs
    if "top_map" in cal:
        xs, ys = calibration.fit_top_map(probs, y)
        new_cal["top_map"] = {**cal["top_map"], "x": xs.tolist(), "y": ys.tolist()}
        served = calibration.out_of_fold_top_map(probs, y)
        probs = calibration.apply_top_map(probs, xs, ys)
    ece = calibration.expected_calibration_error
    new_cal.update(
        method="temperature+domain" + ("+top_map" if "top_map" in cal else ""),
        fitted_on=fitted_on,
        dev=calibration.calibration_report(z, y, t, served=served),
        domain={
            **domain_record(domain, dom),
            "objective": "dev NLL of each side (the domain's items, the others), L-BFGS on "
            "log(T t), t relative to T, on the served graph's logits",
            "dev_items": int(rows.sum()),
            "dev_ece_before": ece(before[rows], y[rows]),
            "dev_ece_after": ece(tempered[rows], y[rows]),
        },
    )
    with artifact.held_temporary(dst.parent, RECALIBRATING, "a recalibration") as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True)
        tmp.chmod(0o755)
        dom.to_file(tmp)
        metadata = _reissued(art.metadata, version, new_cal)
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
        got = Runtime.load(tmp, device="cpu", threads=1, max_batch=BATCH).predict_proba(dev)
        new_cal["graph_check"] = _graph_check(probs, got)
        if (got.argmax(1) != before.argmax(1)).any():
            raise ParityError(f"{src}: a domain's temperature changed dev answers; not written")
        write_card(tmp, metadata)
        record_checksums(metadata, tmp)
        write_metadata(tmp, metadata)
        tmp.rename(dst)
    return metadata
