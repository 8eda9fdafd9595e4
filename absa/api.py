"""The Python API: ``load`` a model, call it on texts.

    from absa import load

    clf = load()  # the shipped model (or what ABSA_REGISTRY / ABSA_MODEL_DIR point at)
    clf("The fries were soggy but the burger was great", aspects=["burger", "fries"])
    # [AspectPrediction(term='burger', start=29, end=35, label='positive', score=0.97, ...), ...]
    clf.batch([{"text": ..., "aspects": [...]}, ...], batch_size=64)

    cats = load("path/to/category-artifact")  # a model of aspect categories
    cats("The fries were soggy", categories=["food", "service"])
    # [CategoryPrediction(category='food', label='negative', ...), ...]

Torch-free: the same ``Predictor`` as the HTTP service and the CLI (onnxruntime).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral
from pathlib import Path
from typing import Any, Literal, overload

from absa.errors import ArtifactError, InputError
from absa.model.categories import CATEGORY
from absa.model.category_predictor import CategoryPrediction, CategoryPredictor
from absa.model.predictor import AUTO, AspectInput, AspectPrediction, Aspects, Predictor
from absa.model.runtime import DEFAULT_MODEL_DIR, Runtime, first_prediction

__all__ = ["AspectPrediction", "CategoryPrediction", "Classifier", "load"]
log = logging.getLogger(__name__)
#: ``load``'s word for the model in the package, as the extractor's "shipped"
SHIPPED = "shipped"


#: keys a batch item may use by mistake for the one that names what it asks about
NEAR_MISSES = ("aspect", "term", "terms", "category")


class Classifier:
    """Aspect-level sentiment with one loaded model (of aspect terms, or of aspect
    categories: ``categories`` lists them). Thread-safe."""

    def __init__(self, predictor: Predictor | CategoryPredictor) -> None:
        self.predictor = predictor
        #: how ``load`` made it (artifact, extractor, device, threads, and what their
        #: metadata said, ``_recorded``): what a pickle carries
        self._loaded_as: tuple[Path, Path | None, str, int, tuple[str, str | None]] | None = None

    def __reduce__(self) -> tuple[Any, tuple[Path, Path | None, str, int, tuple[str, str | None]]]:
        """Pickled (multiprocessing, Ray, Dask, Spark) as the artifact directories it loaded
        (a registry's version as it was then), loaded again, verified, where it lands; and
        refused there if another model is at those paths now (their metadata differs)."""
        if self._loaded_as is None:
            raise TypeError(
                "a Classifier pickles as the directories absa.load read: make it with absa.load"
            )
        return _loaded, self._loaded_as

    def __copy__(self) -> Classifier:
        """A shallow copy, sharing the model (not a reload, as a pickle is)."""
        new = Classifier.__new__(Classifier)
        new.__dict__.update(self.__dict__)
        return new

    @property
    def categories(self) -> list[str] | None:
        """A category model's categories; None for a model of aspect terms."""
        p = self.predictor
        return list(p.categories) if isinstance(p, CategoryPredictor) else None

    @property
    def labels(self) -> list[str]:
        return list(self.predictor.labels)

    @property
    def metadata(self) -> dict:
        """The artifact's metadata: name, version, metrics, training provenance (the
        caller's copy: changing it changes no classifier)."""
        import copy

        return copy.deepcopy(self.predictor.metadata)

    def __repr__(self) -> str:
        return f"Classifier({self.predictor.model_id}, {self.predictor.runtime.model_dir})"

    @overload
    def __call__(
        self, text: str, aspects: Aspects = None, *, categories: None = None, explain: bool = False
    ) -> list[AspectPrediction]: ...

    @overload
    def __call__(
        self, text: str, aspects: None = None, *, categories: Sequence[str], explain: bool = False
    ) -> list[CategoryPrediction]: ...

    def __call__(
        self,
        text: str,
        aspects: Aspects = None,
        *,
        categories: Sequence[str] | None = None,
        explain: bool = False,
    ) -> list[AspectPrediction] | list[CategoryPrediction]:
        """One result per aspect occurrence: a term found twice gives two results, each with
        its own span; pin one with ``{"term", "start", "end"}``. Without aspects (None), the
        extractor given to ``load`` finds them; their results carry ``extracted`` (the
        extractor's confidence). A category model takes ``categories`` instead and answers
        one ``CategoryPrediction`` per category. ``explain`` adds the attention over the
        words. Bad input raises ``absa.errors.InputError``."""
        asked = self._asked(aspects, categories)
        _check_explain(explain)
        return self.predictor(text, asked, explain=explain)  # type: ignore[arg-type]

    def _asked(self, aspects: Any, categories: Any, where: str = "") -> Sequence[Any] | None:
        """What a call asks for, checked against the kind of model loaded (None: aspects to
        be extracted)."""
        if aspects is not None and categories is not None:
            raise InputError(f"{where}give either aspects or categories, not both")
        is_category = isinstance(self.predictor, CategoryPredictor)
        if is_category and (aspects is not None or categories is None):
            raise InputError(f"{where}this is an aspect-category model: ask with categories")
        if not is_category and categories is not None:
            raise InputError(
                f"{where}this is an aspect-term model: ask with aspects, or load a category model"
            )
        asked = categories if is_category else aspects
        if asked is None or (not is_category and isinstance(asked, str) and asked == AUTO):
            if getattr(self.predictor, "extractor", None) is None:  # the server's words said
                raise InputError(  # "setting ABSA_EXTRACTOR": here it is load's argument
                    f"{where}no aspects given, and this classifier has no aspect extractor: "
                    "name at least one aspect term, or load one with absa.load(..., "
                    "extractor='shipped')"
                )
            return None  # the extractor finds them, as "aspects": "auto" asks over HTTP
        if isinstance(asked, str):
            asked = [asked]
        # bytes is a Sequence too: b"food" would be asked for as 102, 111, ...
        if isinstance(asked, bytes | bytearray) or not isinstance(asked, Sequence):
            raise InputError(
                f"{where}aspects or categories must be a list, not {type(asked).__name__} "
                "(or None: extracted)"
            )
        return asked

    @overload
    def batch(
        self,
        items: Iterable[Mapping[str, Any] | tuple[str, Sequence[AspectInput]]],
        *,
        batch_size: int = 64,
        explain: bool = False,
        errors: Literal["raise"] = "raise",
    ) -> list[list[Any]]: ...
    @overload
    def batch(
        self,
        items: Iterable[Mapping[str, Any] | tuple[str, Sequence[AspectInput]]],
        *,
        batch_size: int = 64,
        explain: bool = False,
        errors: Literal["return"],
    ) -> list[list[Any] | InputError]: ...
    def batch(
        self,
        items: Iterable[Mapping[str, Any] | tuple[str, Sequence[AspectInput]]],
        *,
        batch_size: int = 64,
        explain: bool = False,
        errors: Literal["raise", "return"] = "raise",
    ) -> list[Any]:  # lists of AspectPrediction (CategoryPrediction), or InputError
        """Many texts: ``{"text", "aspects"}`` mappings or ``(text, aspects)`` pairs (a
        category model: ``{"text", "categories"}`` or ``(text, categories)``; a mapping's
        own ``"explain"``, as an HTTP batch item's, over the call's ``explain``). Items are
        encoded, then run ``batch_size`` aspects per onnxruntime call (bucketed by length
        across items, the last call the rest); the answer keeps the order of ``items``. A
        bad item, a bad ``batch_size``, or ``items`` that are no iterable of items (a text, one
        item's dict, None) raises ``InputError`` naming it; with ``errors="return"`` a bad
        item's place holds its ``InputError`` instead and the others are answered, as an
        HTTP batch answers each item."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, Integral) or batch_size < 1:
            raise InputError(f"batch_size must be a whole number >= 1, not {batch_size!r}")
        _check_explain(explain)
        if errors not in ("raise", "return"):
            raise InputError(f"errors must be 'raise' or 'return', not {errors!r}")
        # a text or one item's dict would be taken apart into characters or keys
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InputError(
                "items must be a list of items ({'text', 'aspects'} or (text, aspects)), "
                f"not {type(items).__name__}"
            )
        out: list[Any] = []
        for i, item in enumerate(items):
            try:
                out.append(self._prepare(i, item, explain))
            except InputError as e:
                if errors == "raise":
                    raise
                out.append(e)
        good = [p for p in out if not isinstance(p, InputError)]
        # the runtime's own max_batch (64) no longer caps it: a GPU wants larger calls
        answers = iter(self.predictor.predict_many(good, max_batch=int(batch_size)))
        return [p if isinstance(p, InputError) else next(answers) for p in out]

    def _prepare(self, i: int, item: Any, explain: bool) -> Any:
        where = f"items[{i}]: "
        if isinstance(item, Mapping):
            # other keys (an id, a gold term or category) pass, but a near miss of the one
            # that asks would leave the aspects asked for unread (the extractor's answered)
            if "aspects" not in item and "categories" not in item:
                meant = "aspects" if self.categories is None else "categories"  # the model's
                for key in NEAR_MISSES:
                    if key in item:
                        raise InputError(f"{where}{key!r} is not a key of an item: {meant!r}")
            text, aspects, categories = (
                item.get("text"),
                item.get("aspects"),
                item.get("categories"),
            )
        elif isinstance(item, tuple | list) and len(item) == 2:  # a list: a JSON pair
            text, asked = item  # the aspects, or for a category model the categories
            aspects, categories = (None, asked) if self.categories is not None else (asked, None)
        else:
            raise InputError(
                f"{where}an item is {{'text', 'aspects' | 'categories'}} or (text, aspects)"
            )
        if not isinstance(text, str):
            raise InputError(f"{where}text must be a string")
        if isinstance(item, Mapping) and "explain" in item:  # its own, as an HTTP batch item's
            explain = item["explain"]
            _check_explain(explain, where)
        asked = self._asked(aspects, categories, where)
        if isinstance(self.predictor, CategoryPredictor):
            if asked is None:  # _asked refuses a category model's call without categories
                raise AssertionError("a category model asked for no categories")
            return self.predictor.preprocess(text, asked, explain, where)
        return self.predictor.preprocess(text, asked, explain, where)


def _check_explain(explain: object, where: str = "") -> None:
    """InputError for an ``explain`` that is not a bool: "no" and 0 asked for attention as
    any true value did (an HTTP request's is refused so, and so was a batch item's)."""
    if not isinstance(explain, bool):
        raise InputError(f"{where}explain must be true or false, not {explain!r}")


def load(
    model: str | Path | None = None,
    *,
    extractor: str | Path | None = None,
    device: str = "auto",
    threads: int = 0,
) -> Classifier:
    """A classifier for ``model``: an artifact directory, a registry directory (its
    current version), or "shipped" (the model in the package). Without one: what the
    settings point at (``ABSA_REGISTRY``'s current version; before its first promotion,
    said in a warning, ``ABSA_MODEL_DIR``), else the shipped model. The artifact is
    verified (checksum, recorded parity) as the service does at start-up. A category
    model's artifact (``task: category``) gives a classifier of aspect categories.
    ``extractor``: an extractor artifact ("shipped": the packaged one; default:
    ``ABSA_EXTRACTOR``, else none) that finds the aspects of a call without any."""
    from absa.model.registry import Registry
    from absa.settings import ModelSettings, warn_unknown_variables_once

    for name, value in (("model", model), ("extractor", extractor)):
        if value is not None and not isinstance(value, str | os.PathLike):
            raise InputError(f"{name} must be a path (str or Path), not {type(value).__name__}")
    if isinstance(model, str) and not model.strip():  # Path("") is "." : no model meant so
        raise InputError("model is an empty path: name an artifact or a registry (or None)")

    warn_unknown_variables_once()  # as the CLI and the server give, however often it loads
    # these settings alone: a server's setting with a bad value is none of a script's business
    settings = ModelSettings() if extractor is None else ModelSettings(extractor=extractor)
    if model is None:
        path = settings.model_path()
        if settings.registry is not None and not _inside(path, Path(settings.registry)):
            log.warning(
                "registry %s has no current version yet (ABSA_REGISTRY): loading %s, as a "
                "service serves then",
                settings.registry,
                path,
            )
    elif model == SHIPPED:
        path = DEFAULT_MODEL_DIR
    else:
        path = Path(model).expanduser()
        if Registry.looks_like(path):
            path = Registry(path).current_path()
    return _loaded(path, settings.extractor_path(), device, threads, asked=extractor is not None)


def _inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _loaded(
    path: Path,
    ext_dir: Path | None,
    device: str,
    threads: int,
    expected: tuple[str, str | None] | None = None,
    asked: bool = True,
) -> Classifier:
    """The classifier of the artifact at ``path`` (and, for a model of aspect terms, the
    extractor at ``ext_dir``; ``asked``: by the caller, not ABSA_EXTRACTOR). ``expected``:
    what their metadata said when a pickled classifier was made (``_recorded``);
    an artifact verifies against its own metadata alone, so another one put at the path, or
    an edited metadata.json (other labels), would have loaded as if it were the same."""
    runtime = Runtime.load(path, device=device, threads=threads, task=None)
    first_prediction(runtime, path)  # a graph that cannot run is refused here, as a server does
    if runtime.task == CATEGORY and ext_dir is not None:
        if asked:  # it would be loaded and never used
            raise InputError(
                f"{path} is an aspect-category model: a category model finds no aspects, so "
                "it takes no extractor (load it with extractor='')"
            )
        ext_dir = None  # ABSA_EXTRACTOR is the term model's
    ext = None
    if ext_dir is not None:
        from absa.model.extractor import Extractor

        if not asked and not ext_dir.exists():  # the environment's: unknown to the caller
            raise ArtifactError(
                f"{ext_dir}: does not exist (ABSA_EXTRACTOR names it; load(extractor='') "
                "loads no extractor)"
            )
        ext = Extractor.load(ext_dir, device=device, threads=threads)
    recorded = (_recorded(runtime.metadata), None if ext is None else _recorded(ext.metadata))
    if expected is not None and recorded != expected:
        changed = path if recorded[0] != expected[0] else ext_dir
        raise ArtifactError(
            f"{changed}: the artifact changed since this classifier was pickled (its "
            "metadata.json differs): another model than the one pickled; load it again"
        )
    if runtime.task == CATEGORY:
        clf = Classifier(CategoryPredictor(runtime))
    else:
        clf = Classifier(Predictor(runtime, extractor=ext))
    # absolute: a pickle is loaded by a process that may run in another directory
    ext_path = None if ext is None else Path(ext.model_dir).resolve()
    clf._loaded_as = (Path(runtime.model_dir).resolve(), ext_path, device, threads, recorded)
    return clf


def _recorded(metadata: Mapping[str, Any]) -> str:
    """A digest of an artifact's metadata, which records every file's sha256, its labels and
    version: the same digest, the same model (a metadata.json written again with other
    whitespace is the same)."""
    import hashlib
    import json

    canonical = json.dumps(metadata, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
