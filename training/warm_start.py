"""Start a network from a finished run's weights (``train.init_from``) instead of at random.

What it is for: several short runs from one trained student, each with its own seed (batch
order, dropout), whose weights are then averaged (a "model soup", Wortsman et al. 2022;
``benchmarks/soup.py``). Children of one trained parent stay in its basin, so their mean
is a network too, where the mean of independently seeded runs is not.

The start must be the same network over the same vocabulary: its model config and its
words are compared with the ones this training built, and any difference is refused with
what differs, never loaded approximately.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from absa.model.artifact import sha256_file
from absa.model.config import ModelConfig
from absa.model.network import ABSANet
from absa.model.text import WordPiecePipeline, WordPipeline, load_pipeline
from absa.training import rundir

log = logging.getLogger(__name__)


def start_from(
    net: ABSANet, mcfg: ModelConfig, pipe: WordPipeline | WordPiecePipeline, run_dir: Path
) -> dict:
    """Load ``run_dir``'s weights into ``net`` (strictly) after checking that the run is the
    same network over the same words; returns the record run.json keeps of the start."""
    run_dir = Path(run_dir)
    weights = run_dir / rundir.WEIGHTS
    if not rundir.is_run(run_dir) or not weights.is_file():
        raise ValueError(f"init_from: {run_dir} is not a finished run (no {rundir.WEIGHTS})")
    their_pipe = load_pipeline(run_dir)
    if not isinstance(pipe, WordPipeline) or not isinstance(their_pipe, WordPipeline):
        raise ValueError("init_from: only word-vocabulary networks, not a transformer's")
    if their_pipe.tokenizer != pipe.tokenizer:
        raise ValueError(
            f"init_from: {run_dir} reads words of tokenizer {their_pipe.tokenizer}, this run "
            f"those of {pipe.tokenizer}: train the start again"
        )
    if their_pipe.words != pipe.words:
        raise ValueError(
            f"init_from: {run_dir} was trained over other words ({len(their_pipe.words)} "
            f"against {len(pipe.words)}; the first difference at row "
            f"{first_difference(their_pipe.words, pipe.words)}): use the same data and vectors"
        )
    theirs = json.loads((run_dir / rundir.MODEL_CONFIG).read_text())
    ours = mcfg.to_dict()
    differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
    if differ:
        raise ValueError(f"init_from: {run_dir} is another network: its {', '.join(differ)} differ")
    from safetensors.torch import load_file

    net.load_state_dict(load_file(str(weights)), strict=True)
    record = {"run": str(run_dir), "weights_sha256": sha256_file(weights)}
    log.info("started from %s (weights %s)", run_dir, record["weights_sha256"][:8])
    return record


def first_difference(a: list[str], b: list[str]) -> int:
    """The first row where two vocabularies differ (the shorter one's length if one is a prefix)."""
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
