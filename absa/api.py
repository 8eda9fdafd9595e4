"""The Python API: ``load`` a model, call it on texts.

    from absa import load

    clf = load()  # the shipped model (or what ABSA_REGISTRY / ABSA_MODEL_DIR point at)
    clf("The fries were soggy but the burger was great", aspects=["burger", "fries"])
    # [AspectPrediction(term='burger', start=29, end=35, label='positive', score=0.97, ...), ...]
    clf.batch([{"text": ..., "aspects": [...]}, ...], batch_size=64)

Torch-free: the same ``Predictor`` as the HTTP service and the CLI (onnxruntime).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from absa.errors import InputError
from absa.model.predictor import AspectInput, AspectPrediction, Aspects, Predictor, Prepared
from absa.model.runtime import Runtime

__all__ = ["AspectPrediction", "Classifier", "load"]


class Classifier:
    """Aspect-level sentiment with one loaded model. Thread-safe."""

    def __init__(self, predictor: Predictor) -> None:
        self.predictor = predictor

    @property
    def labels(self) -> list[str]:
        return list(self.predictor.labels)

    @property
    def metadata(self) -> dict:
        """The artifact's metadata: name, version, metrics, training provenance."""
        return self.predictor.metadata

    def __repr__(self) -> str:
        return f"Classifier({self.predictor.model_id}, {self.predictor.runtime.model_dir})"

    def __call__(
        self, text: str, aspects: Aspects = None, *, explain: bool = False
    ) -> list[AspectPrediction]:
        """One result per aspect occurrence: a term found twice gives two results, each with
        its own span; pin one with ``{"term", "start", "end"}``. Without aspects (None), the
        extractor given to ``load`` finds them; their results carry ``extracted`` (the
        extractor's confidence). ``explain`` adds the attention over the words. Bad input
        raises ``absa.errors.InputError``."""
        if isinstance(aspects, str):
            aspects = [aspects]
        return self.predictor(text, aspects, explain=explain)

    def batch(
        self,
        items: Iterable[Mapping[str, Any] | tuple[str, Sequence[AspectInput]]],
        *,
        batch_size: int = 64,
        explain: bool = False,
    ) -> list[list[AspectPrediction]]:
        """Many texts: ``{"text", "aspects"}`` mappings or ``(text, aspects)`` pairs. Items are
        encoded, then run ``batch_size`` aspects per onnxruntime call; the answer keeps the
        order of ``items``. A bad item raises ``InputError`` naming its index."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        prepared = [self._prepare(i, item, explain) for i, item in enumerate(items)]
        answers: list[list[AspectPrediction]] = []
        chunk: list[Prepared] = []
        size = 0
        for p in prepared:
            if chunk and size + len(p.items) > batch_size:
                answers.extend(self.predictor.predict_many(chunk))
                chunk, size = [], 0
            chunk.append(p)
            size += len(p.items)
        if chunk:
            answers.extend(self.predictor.predict_many(chunk))
        return answers

    def _prepare(self, i: int, item: Any, explain: bool) -> Prepared:
        where = f"items[{i}]: "
        if isinstance(item, Mapping):
            text, aspects = item.get("text"), item.get("aspects")
        elif isinstance(item, tuple) and len(item) == 2:
            text, aspects = item
        else:
            raise InputError(f"{where}an item is {{'text', 'aspects'}} or (text, aspects)")
        if not isinstance(text, str):
            raise InputError(f"{where}text must be a string")
        if isinstance(aspects, str):
            aspects = [aspects]
        if aspects is not None and not isinstance(aspects, Sequence):
            raise InputError(f"{where}aspects must be a list (or None: extracted)")
        return self.predictor.preprocess(text, aspects, explain, where)


def load(
    model: str | Path | None = None,
    *,
    extractor: str | Path | None = None,
    device: str = "auto",
    threads: int = 0,
) -> Classifier:
    """A classifier for ``model``: an artifact directory, or a registry directory (its
    current version). Without one: what the settings point at (``ABSA_REGISTRY``'s current
    version, ``ABSA_MODEL_DIR``), else the model shipped in the package. The artifact is
    verified (checksum, recorded parity) as the service does at start-up. ``extractor``: an
    extractor artifact ("shipped": the packaged one; default: ``ABSA_EXTRACTOR``, else none)
    that finds the aspects of a call without any."""
    from absa.model.registry import Registry
    from absa.settings import Settings

    settings = Settings() if extractor is None else Settings(extractor=extractor)
    ext_dir = settings.extractor_path()
    ext = None
    if ext_dir is not None:
        from absa.model.extractor import Extractor

        ext = Extractor.load(ext_dir, device=device, threads=threads)
    if model is None:
        path = settings.model_path()
    else:
        path = Path(model)
        if Registry.looks_like(path):
            path = Registry(path).current_path()
    runtime = Runtime.load(path, device=device, threads=threads)
    return Classifier(Predictor(runtime, extractor=ext))
