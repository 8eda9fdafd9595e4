"""One recurrent layer as one ONNX LSTM/GRU node with ``sequence_lens``, for export only.

In torch a bidirectional layer runs two cells, the backward one on each sequence reversed
within its own length by index gathers (``network._Directions.layer``). Exported as traced,
that is two LSTM nodes and about twenty index nodes per layer, and at batch 1 a served
graph's time goes mostly to its node count. ONNX's LSTM and GRU take the lengths
themselves (``sequence_lens``: the forward pass stops at each sequence's last token, the
backward pass starts there, outputs past the end are zero), so one node in both
directions computes what the torch layer does. ``recurrence`` gives the torch layer's own
outputs to torch and, to the exporter, that one node: the weights reordered into ONNX's
gate order (LSTM i, o, f, c from torch's i, f, g, o; GRU z, r, h from r, z, n, with
``linear_before_reset``, torch's form), which the exporter folds into initializers.
The export's parity check (``export._check_parity``) compares the two on real items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

# torch's gate blocks in ONNX's order
GATE_ORDER = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2)}


def _gates(t: torch.Tensor, cell: str, hidden: int) -> torch.Tensor:
    """The stacked gate blocks of a weight or bias (dim 0) in ONNX's order."""
    return torch.cat([t[g * hidden : (g + 1) * hidden] for g in GATE_ORDER[cell]])


def onnx_weights(
    cells: Sequence[nn.RNNBase], cell: str, hidden: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W (D, G*h, in), R (D, G*h, h) and B (D, 2*G*h) of ONNX's LSTM/GRU from one
    single-layer torch cell per direction (forward first)."""

    def stacked(*names: str) -> torch.Tensor:
        return torch.stack(
            [torch.cat([_gates(c.get_parameter(n), cell, hidden) for n in names]) for c in cells]
        )

    return stacked("weight_ih_l0"), stacked("weight_hh_l0"), stacked("bias_ih_l0", "bias_hh_l0")


class _Recurrence(torch.autograd.Function):
    """Identity on the torch layer's (H, h_N); exported as one LSTM/GRU node over x."""

    @staticmethod
    def forward(
        ctx: Any,
        out: torch.Tensor,
        h_n: torch.Tensor,
        x: torch.Tensor,
        lengths: torch.Tensor,
        w: torch.Tensor,
        r: torch.Tensor,
        b: torch.Tensor,
        cell: str,
        hidden: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return out.clone(), h_n.clone()

    @staticmethod
    def symbolic(
        g: Any, out: Any, h_n: Any, x: Any, lengths: Any, w: Any, r: Any, b: Any, cell: str,
        hidden: int,
    ) -> tuple[Any, Any]:  # fmt: skip
        directions = "bidirectional" if w.type().sizes()[0] == 2 else "forward"
        seq = g.op("Cast", lengths, to_i=6)  # int32, as sequence_lens must be
        x_t = g.op("Transpose", x, perm_i=[1, 0, 2])  # (T, B, in)
        extra = {"linear_before_reset_i": 1} if cell == "gru" else {}
        y, y_h = g.op(
            "LSTM" if cell == "lstm" else "GRU",
            x_t,
            w,
            r,
            b,
            seq,
            hidden_size_i=hidden,
            direction_s=directions,
            outputs=2 if cell == "gru" else 3,
            **extra,
        )[:2]
        # Y (T, D, B, h) -> (B, T, D*h): directions side by side, as torch.cat puts them
        keep = g.op("Constant", value_t=torch.tensor([0, 0, -1], dtype=torch.int64))
        y = g.op("Reshape", g.op("Transpose", y, perm_i=[2, 0, 1, 3]), keep)
        # Y_h (D, B, h) -> (B, D*h): the forward state at each sequence's end, the backward
        # one at its start
        keep2 = g.op("Constant", value_t=torch.tensor([0, -1], dtype=torch.int64))
        y_h = g.op("Reshape", g.op("Transpose", y_h, perm_i=[1, 0, 2]), keep2)
        return y, y_h


def recurrence(
    out: torch.Tensor,
    h_n: torch.Tensor,
    x: torch.Tensor,
    lengths: torch.Tensor,
    cells: Sequence[nn.RNNBase],
    cell: str,
    hidden: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch layer's ``out`` (B, T, D*h, before the padding mask) and ``h_n`` (B, D*h)
    as they are; under ``torch.onnx.export``, one ONNX node that computes them from ``x``
    (B, T, in) and ``lengths`` (B,)."""
    w, r, b = onnx_weights(cells, cell, hidden)
    result: tuple[torch.Tensor, torch.Tensor] = _Recurrence.apply(
        out, h_n, x, lengths, w, r, b, cell, hidden
    )
    return result
