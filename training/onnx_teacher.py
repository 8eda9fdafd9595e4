"""A teacher run scored through onnxruntime on the CPU, for the teacher cache.

An mpnet teacher scores its students' aspects at about 3.5 a second on one thread of this
project's 2-core CPU through torch, and at about 6.5 through onnxruntime (session 50,
``benchmarks/teacher_engines.py``): a rebuild's 74,000 aspects take hours either way, and
onnxruntime takes nearly half of them off. The run is exported once (fp32, no temperature, so
the probabilities are the network's softmax as torch gives them), and export's parity check
against torch on the run's dev set (``absa.model.export``: every probability within
``PARITY_ATOL``, no prediction changed) must pass before anything is scored. The scores go
into the cache under the run's own key, as torch's would.

The export (and its parity check: 13-18 minutes for an mpnet teacher on this CPU) is kept
where the caller says, so a scoring cut off with the session goes on without making it again.
A kept export is loaded as any artifact is (every file's sha256 and the recorded parity
checked); one that fails that is made again.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from absa.errors import ArtifactError
from absa.training.records import Example

log = logging.getLogger(__name__)

__all__ = ["export_into", "onnx_scorer"]


def export_into(run: Path, art: Path) -> dict:
    """Export ``run`` (fp32, no temperature, parity-checked) to ``art``, whole or not at all:
    into a sibling first, renamed into place once the export has passed."""
    from absa.training.exporting import export_run

    part = art.with_name(f".{art.name}.part-{os.getpid()}")
    shutil.rmtree(part, ignore_errors=True)
    meta = export_run(run, part, calibrate=False)
    shutil.rmtree(art, ignore_errors=True)  # a torn or failed one
    os.replace(part, art)
    log.info(
        "teacher %s exported for onnxruntime: parity on %d dev items, max |diff| %.1e",
        run,
        meta["parity"]["n"],
        meta["parity"]["max_abs_diff"],
    )
    return meta


def onnx_scorer(
    run: Path, threads: int, keep: Path
) -> Callable[[Sequence[Example]], tuple[np.ndarray, list[str]]]:
    """A scoring function for ``teacher_cache.cached_scores``: the run exported to ``keep``
    (parity-checked; an export already there is loaded instead) and scored by an
    onnxruntime session of ``threads`` threads.

    The export waits for the first call, so a cache that already holds every aspect asked
    for costs no export (about 40 s and a 450 MB copy for an mpnet teacher)."""
    from absa.model.categories import encode_example
    from absa.model.runtime import Runtime

    loaded: list[Runtime] = []

    def runtime() -> Runtime:
        if not loaded:
            art = Path(keep)
            if (art / "metadata.json").is_file():
                try:
                    loaded.append(Runtime.load(art, threads=threads))
                    log.info("teacher %s: its onnxruntime export kept in %s", run, art)
                except ArtifactError as e:
                    log.warning(
                        "teacher %s: the kept export fails its checks (%s): made again", run, e
                    )
            if not loaded:
                export_into(Path(run), art)
                loaded.append(Runtime.load(art, threads=threads))
        return loaded[0]

    def score(examples: Sequence[Example]) -> tuple[np.ndarray, list[str]]:
        rt = runtime()
        labels = list(rt.labels)
        if not examples:
            return np.zeros((0, len(labels)), np.float32), labels
        encoded = [
            encode_example(rt.pipeline, e, rt.categories, rt.category_pair) for e in examples
        ]
        return np.stack([o.probs for o in rt.run(encoded)]).astype(np.float32), labels

    return score
