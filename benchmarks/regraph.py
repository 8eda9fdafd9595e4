"""Export a shipped artifact's network again into this checkout's graph, from the artifact
alone, for when its run directory is gone (runs/ is never committed): the weights are read
back out of its model.onnx into the network its metadata describes, that network is exported
as ``absa export`` exports (the same temperature in the graph), the int8 word table and its
scale are carried over byte for byte, and the new graph must answer every item of the four
test sets as the old one does (probabilities and attention within 1e-5, no answer changed)
before anything is written. The top-label map, vocabulary and pipeline are the artifact's.

    python benchmarks/regraph.py --artifact model/artifacts/default --version 1.9.1 \\
        --out runs/regraph-1.9.1

Reads the graph ``absa export`` wrote at 56c48b1 and before (one LSTM/GRU node per
direction, MatMul weights transposed, the classifier a Gemm): a word-table network without
self-attention or positions, which 1.9.0 is; anything else it cannot place is refused by
name (the network loads its weights strictly). Writes OUT (an artifact: metadata.json says
``regraphed`` from which graph, with the test sets' parity) and nothing else.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absa.model import artifact  # noqa: E402
from absa.model.card import write_card  # noqa: E402
from absa.model.config import ModelConfig  # noqa: E402
from absa.model.export import _export_onnx, export_versions, word_table_gathers  # noqa: E402
from absa.model.network import ABSANet  # noqa: E402
from absa.model.onnx_rnn import GATE_ORDER  # noqa: E402
from absa.model.runtime import Runtime  # noqa: E402
from absa.training.provenance import code_version  # noqa: E402
from absa.training.readers import read_examples  # noqa: E402
from benchmarks.datasets import test_files  # noqa: E402
from benchmarks.default_model import latency_words  # noqa: E402

log = logging.getLogger("regraph")
ONNX = "model.onnx"


def weights_of(graph: onnx.GraphProto, cell: str, hidden: int) -> dict[str, torch.Tensor]:
    """The torch state dict a graph's initializers hold, by the nodes that read them."""
    init = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state: dict[str, np.ndarray] = {}
    back = np.argsort(GATE_ORDER[cell])  # ONNX's gate blocks back into torch's order
    g = len(back)

    def torch_gates(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a[k * hidden : (k + 1) * hidden] for k in back])

    for node in graph.node:
        path = node.name.strip("/").split("/")
        if path[0] != "net":
            continue
        module = ".".join(path[1:-1])
        held = [init[i] for i in node.input if i in init]
        if node.op_type == cell.upper():
            w, r, b = held[:3]  # (D, G*h, ...): one direction (before 31a3894) or both
            if path[-2] in ("fwd", "bwd"):
                names = [module]
            else:
                names = [f"{module}.fwd", f"{module}.bwd"][: len(w)]
            for d, name in enumerate(names):
                state[f"{name}.weight_ih_l0"] = torch_gates(w[d])
                state[f"{name}.weight_hh_l0"] = torch_gates(r[d])
                state[f"{name}.bias_ih_l0"] = torch_gates(b[d, : g * hidden])
                state[f"{name}.bias_hh_l0"] = torch_gates(b[d, g * hidden :])
        elif node.op_type == "MatMul" and len(held) == 1 and path[-1] == "MatMul":
            state[f"{module}.weight"] = held[0].T
    for name, a in init.items():  # the classifier's, by name
        if name.startswith("net.") and name.endswith("_Transposed"):
            state[name[4 : -len("_Transposed")]] = a.T
        elif name.startswith("net.") and name.endswith((".bias", ".weight")):
            state[name[4:]] = a
    if "net.encoder.table.weight_quantized" in init:  # int8-embeddings
        q = init["net.encoder.table.weight_quantized"].astype(np.float32)
        scale = init["net.encoder.table.weight_scale"].astype(np.float32)
        zero = init["net.encoder.table.weight_zero_point"].astype(np.float32)
        state["encoder.table.weight"] = (q - zero) * scale
    return {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in state.items()}


def carry_table(old: onnx.GraphProto, path: Path) -> None:
    """The new graph's int8 word table, scale and zero point replaced by the old graph's."""
    model = onnx.load(str(path))
    olds = {i.name: i for i in old.initializer if i.name.startswith("net.encoder.table.weight_")}
    kept = 0
    for i, init in enumerate(model.graph.initializer):
        if init.name in olds:
            model.graph.initializer[i].CopyFrom(olds[init.name])
            kept += 1
    if kept != len(olds) or kept != 3:
        raise SystemExit(f"the new graph's word table is not the old one's: {kept} of {len(olds)}")
    onnx.save(model, str(path))


def answers(rt: Runtime, spans: list[tuple[str, int, int]]) -> tuple[np.ndarray, list[np.ndarray]]:
    outs = rt.run([rt.encode(*s) for s in spans], self_attention=False)
    return np.stack([o.probs for o in outs]), [o.attention for o in outs]


def parity(old: Runtime, new: Runtime) -> dict[str, dict[str, Any]]:
    """Each test set's items answered by both: the largest difference and the changed answers."""
    report = {}
    for name, path in test_files().items():
        spans = [(e.text, e.start, e.end) for e in read_examples(path).examples]
        p0, a0 = answers(old, spans)
        p1, a1 = answers(new, spans)
        report[name] = {
            "n": len(spans),
            "max_abs_prob_diff": float(np.abs(p0 - p1).max()),
            "max_abs_attention_diff": float(
                max(np.abs(x - y).max() for x, y in zip(a0, a1, strict=True))
            ),
            "changed_answers": int((p0.argmax(1) != p1.argmax(1)).sum()),
        }
        log.info("%s: %s", name, report[name])
    return report


def graph_words(old: onnx.GraphProto, path: Path, report: dict[str, dict[str, Any]]) -> str:
    """The card's line on the new graph: what changed and what did not."""
    new = onnx.load(str(path)).graph
    n = sum(r["n"] for r in report.values())
    worst = max(r["max_abs_prob_diff"] for r in report.values())
    return (
        f"- **Graph**: the same weights, temperature and map, exported again from the previous "
        f"version's model.onnx alone (`benchmarks/regraph.py`): each recurrent layer one ONNX "
        f"LSTM node over the sequence lengths, {len(new.node)} nodes in all (was "
        f"{len(old.node)}); the int8 word table carried over byte for byte; the {n:,} aspects "
        f"of the four test sets answered as before (max |Δp| {worst:.1e}, no answer changed)."
    )


def carry_card(old_card: Path, tmp: Path, meta: dict, graph: str) -> None:
    """The shipped default's card (benchmarks/default_model.py wrote it, from inputs that are
    gone) kept, with the new version, a line on the graph, the regraph command after the
    export's in Reproduce and eval.json, and the latency paragraph of the latest records."""
    lines = old_card.read_text(encoding="utf-8").split("\n")
    cmd = meta["regraphed"]["command"]
    out = []
    for i, line in enumerate(lines):
        if i == 0 and line.startswith("# "):
            line = line.rsplit(" ", 1)[0] + " " + meta["version"]
        if line.startswith("onnxruntime on 2 CPU cores:") or line.startswith("Not measured yet"):
            line = latency_words()
        out.append(line)
        if line.startswith("## Calibration"):  # the graph's line ends the bullets above it
            out[-2:-2] = [graph]
        if line.startswith("absa export --run"):
            out.append(cmd)
    (tmp / "README.md").write_text("\n".join(out), encoding="utf-8")
    ev = json.loads((tmp / "eval.json").read_text(encoding="utf-8"))
    at = next(i for i, c in enumerate(ev["commands"]) if c.startswith("absa export --run"))
    ev["commands"].insert(at + 1, cmd)
    (tmp / "eval.json").write_text(json.dumps(ev, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", type=Path, required=True)
    ap.add_argument("--version", required=True, help="the new artifact's version")
    ap.add_argument("--out", type=Path, required=True)
    given = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(given)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    old_meta = artifact.load(args.artifact).metadata
    cfg = ModelConfig.from_dict(old_meta["model_config"])
    old_graph = onnx.load(str(args.artifact / ONNX)).graph
    quantized = (old_meta.get("quantization") or {}).get("type")
    if quantized not in (None, "int8-embeddings"):
        raise SystemExit(f"{args.artifact}: a {quantized} graph's weights are not the network's")
    net = ABSANet(cfg).eval()
    found = weights_of(old_graph, cfg.cell, cfg.hidden_size)
    wanted = dict(net.named_parameters())
    missing = sorted(set(wanted) - set(found))
    if missing or set(found) - set(wanted):
        raise SystemExit(
            f"{args.artifact}: cannot place every weight of its network in the graph "
            f"(not found: {missing}; not the network's: {sorted(set(found) - set(wanted))})"
        )
    net.load_state_dict(found, strict=True)
    if args.out.exists():
        raise SystemExit(f"{args.out}: already there")
    temperature = float(old_meta["calibration"]["temperature"])
    with artifact.staged(args.out) as tmp:
        for f in args.artifact.iterdir():
            if f.name not in (ONNX, "metadata.json", "README.md"):
                shutil.copy2(f, tmp / f.name)
        labels = old_meta["labels"]
        _export_onnx(net, tmp / ONNX, bool(cfg.self_attention_heads), labels, temperature)
        meta = json.loads(json.dumps(old_meta))
        if quantized:
            nodes = word_table_gathers(tmp / ONNX)
            size_fp32 = artifact.quantize_graph(tmp, meta, op_types=["Gather"], nodes=nodes)
            carry_table(old_graph, tmp / ONNX)
            meta["quantization"]["bytes_fp32"] = size_fp32  # this graph's; the rest is as before
            meta["quantization"]["bytes_int8"] = (tmp / ONNX).stat().st_size
        artifact.record_checksums(meta, tmp)
        artifact.write_metadata(tmp, meta)
        report = parity(Runtime.load(args.artifact, threads=2), Runtime.load(tmp, threads=2))
        worst = max(
            max(r["max_abs_prob_diff"], r["max_abs_attention_diff"]) for r in report.values()
        )
        if worst > 1e-5 or any(r["changed_answers"] for r in report.values()):
            raise SystemExit(f"the new graph answers differently: {report}")
        meta["version"] = args.version
        meta["created"] = datetime.now(UTC).isoformat(timespec="seconds")
        meta["onnx"]["exported_with"] = export_versions()
        meta["regraphed"] = {
            "from_version": old_meta["version"],
            "from_sha256": old_meta["onnx"]["sha256"],
            "code_version": code_version(),
            "command": shlex.join(["python", "benchmarks/regraph.py", *given]),
            "test_parity": report,
        }
        old_card = args.artifact / "README.md"
        if "Made first" in old_card.read_text(encoding="utf-8"):  # the shipped default's card
            carry_card(old_card, tmp, meta, graph_words(old_graph, tmp / ONNX, report))
        else:
            write_card(tmp, meta)
        artifact.record_checksums(meta, tmp)
        artifact.write_metadata(tmp, meta)
    log.info("wrote %s (%s, from %s)", args.out, args.version, old_meta["version"])


if __name__ == "__main__":
    main()
