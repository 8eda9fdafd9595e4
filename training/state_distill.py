"""The hint term of ``TrainConfig.distill_states``: the student's recurrent states, through a
linear map used only in training, regress onto the teacher's contextual word states
(``teacher_states.py``). The map is not part of the network: nothing of it is saved or
exported, and the served graph is the same as without the term.

With ``distill_states_apart``, the items of the named files go through a second map of
their own (a domain whose states one shared map would pull the wrong way); an item both
skipped and apart is skipped.

The states are read off the network's RNN by a forward hook, so the network's code and
its ONNX graph do not change. The loss is the mean squared error over the words the
teacher read (padding and words past its length left out), per dimension.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from absa.model.network import ABSANet
from absa.model.text import Encoded
from absa.training.records import TRANSFER, Labelled
from absa.training.substitute import comes_from
from absa.training.teacher_states import TeacherStates

log = logging.getLogger(__name__)


def skipped(source: str, endings: Sequence[str]) -> bool:
    """Whether a training item (``path:line``; a transfer item ``transfer:`` and its
    candidate's source, a copy's ``subst<i>:path:line``) comes from a file ending so."""
    if not endings:
        return False
    return comes_from(source.removeprefix(TRANSFER), endings)


class StateHint(nn.Module):
    """The map from the student's states (D) to the teacher's (dim) (and the ``apart``
    files' own map), each training item's targets, and the states the last forward pass
    produced."""

    def __init__(
        self,
        net: ABSANet,
        states_dir: Path,
        examples: Sequence[Labelled],
        encoded: Sequence[Encoded],
        skip: Sequence[str] = (),
        apart: Sequence[str] = (),
    ) -> None:
        super().__init__()
        states = TeacherStates(states_dir)
        self.record = {"path": str(states_dir), **states.record, "skip": list(skip)}
        self.proj = nn.Linear(net.cfg.rnn_dim, states.dim)
        # items of the ``apart`` files: a second map, theirs alone
        self.apart = nn.Linear(net.cfg.rnn_dim, states.dim) if apart else None
        self.own_map = [bool(apart) and skipped(e.source, apart) for e in examples]
        if apart:
            self.record["apart"] = list(apart)
            self.record["items_apart"] = sum(self.own_map)
        left_out = [skipped(e.source, skip) for e in examples]
        self.targets: list[np.ndarray | None] = [
            None if out else states.rows(e.text, enc.tokens)
            for e, enc, out in zip(examples, encoded, left_out, strict=True)
        ]
        found = sum(t is not None for t in self.targets)
        self.record["items_skipped"] = sum(left_out)
        self.record["items_with_targets"] = found
        self.record["items"] = len(self.targets)
        log.info("teacher states for %d of %d training items (%s)", found, len(encoded), states_dir)
        if not found:
            raise ValueError(f"{states_dir}: no training sentence has teacher states")
        self._h: torch.Tensor | None = None
        self._hook = net.rnn.register_forward_hook(self._keep)
        self.to(next(net.parameters()).device)

    def _keep(self, module: nn.Module, args: object, out: tuple[torch.Tensor, ...]) -> None:
        self._h = out[0]  # (B, T, D), zero on padding

    def close(self) -> None:
        """Remove the hook: the network is as it was built."""
        self._hook.remove()
        self._h = None

    def loss(self, items: Sequence[int]) -> torch.Tensor:
        """The mean squared error, per dimension, of the mapped states of the last forward
        pass (the batch ``items``) against the teacher's, over the words it read."""
        if self._h is None:
            raise RuntimeError("no forward pass to take states from")
        h = self._h
        b, t, _ = h.shape
        target = torch.full((b, t, self.proj.out_features), float("nan"), device=h.device)
        for row, i in enumerate(items):
            rows = self.targets[i]
            if rows is not None:
                n = min(t, len(rows))
                target[row, :n] = torch.from_numpy(rows[:n]).to(h.device)
        read = ~torch.isnan(target[..., 0])
        if not bool(read.any()):
            return h.sum() * 0.0
        states = h[read]
        if self.apart is None:
            mapped = self.proj(states)
        else:  # each word through its item's map, and through that one alone
            own = torch.tensor([self.own_map[i] for i in items], device=h.device)
            own = own[:, None].expand(b, t)[read]
            mapped = states.new_empty(len(states), self.proj.out_features)
            mapped[~own] = self.proj(states[~own])
            mapped[own] = self.apart(states[own])
        err = mapped - target[read]
        return err.pow(2).mean()
