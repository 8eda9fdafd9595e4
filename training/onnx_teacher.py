"""A teacher run scored through onnxruntime on the CPU, for the teacher cache.

An mpnet teacher scores its students' aspects at about 3.5 a second on one thread of this
project's 2-core CPU through torch, and at about 6.5 through onnxruntime (session 50,
``benchmarks/teacher_engines.py``): a rebuild's 74,000 aspects take hours either way, and
onnxruntime takes nearly half of them off. The run is exported once (fp32, no temperature, so
the probabilities are the network's softmax as torch gives them), and export's parity check
against torch on the run's dev set (``absa.model.export``: every probability within
``PARITY_ATOL``, no prediction changed) must pass before anything is scored. The scores go
into the cache under the run's own key, as torch's would.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from absa.training.records import Example

log = logging.getLogger(__name__)

__all__ = ["onnx_scorer"]


def onnx_scorer(
    run: Path, threads: int, workdir: Path
) -> Callable[[Sequence[Example]], tuple[np.ndarray, list[str]]]:
    """A scoring function for ``teacher_cache.cached_scores``: the run exported to
    ``workdir`` (parity-checked) and scored by an onnxruntime session of ``threads`` threads.

    The export waits for the first call, so a cache that already holds every aspect asked
    for costs no export (about 40 s and a 450 MB copy for an mpnet teacher)."""
    from absa.model.categories import encode_example
    from absa.model.runtime import Runtime
    from absa.training.exporting import export_run

    loaded: list[Runtime] = []

    def runtime() -> Runtime:
        if not loaded:
            art = Path(workdir) / "artifact"
            meta = export_run(Path(run), art, calibrate=False)
            log.info(
                "teacher %s exported for onnxruntime: parity on %d dev items, max |diff| %.1e",
                run,
                meta["parity"]["n"],
                meta["parity"]["max_abs_diff"],
            )
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
