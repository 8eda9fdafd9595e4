"""A temperature of its own for requests that read like one domain (laptop reviews).

One temperature fitted on dev leaves a domain that is harder than the rest over-confident:
the shipped networks are as sure on laptop reviews as on restaurants and right less often,
and dev's laptop part wants a softer temperature (1.05-1.10) than all of dev (0.90-0.93), as
the Lap14 test set does (docs/benchmarks.md, "A temperature for laptop-like sentences"). A
request names no domain, so its words decide: a logistic regression on which words a
sentence holds, fitted at export on the training sentences (the domain's files against the
rest, dev's sentences left out). Where it says "in the domain" (logit > 0), the graph's
probabilities (after the global T) are tempered once more, ``softmax(log p / t)``, and the
others by a temperature of their own (``outside``: without the domain's items dev wants a
little sharper T), before the top-label map. Both are relative to T, fitted by NLL on their
side of dev (``fit_temperatures``), so an artifact keeps its graph as it is. No answer
changes: a temperature keeps the order of the probabilities.

The artifact keeps the word weights in ``domain.json`` (hashed with the other files) and the
metadata's ``calibration.domain`` says what it is: name, temperature, the files it was
fitted on. numpy only at serving time; ``fit_words`` (export) uses scikit-learn.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from absa.errors import ArtifactError
from absa.model.text import Token

__all__ = [
    "DOMAIN_FILE",
    "MIN_DEV_ITEMS",
    "DomainTemperature",
    "fit_temperatures",
    "fit_words",
    "temper",
    "words_of",
]

DOMAIN_FILE = "domain.json"
MIN_DEV_ITEMS = 100  # dev items in the domain a temperature of its own needs
MIN_SENTENCES = 2  # a word in fewer training sentences than this gets no weight


def words_of(tokens: Iterable[Token]) -> frozenset[str]:
    """The lower-cased words a sentence holds (special tokens, which cover no text, left
    out): the classifier's features, the same at export and at serving."""
    return frozenset(t.text.lower() for t in tokens if t.end > t.start)


@dataclass(frozen=True)
class DomainTemperature:
    """A domain's word classifier, its temperature and the others' (relative to the graph's)."""

    name: str
    bias: float
    weights: Mapping[str, float]
    temperature: float
    outside: float = 1.0

    def logits(self, token_lists: Iterable[Iterable[Token]]) -> np.ndarray:
        """The classifier's logit per item: > 0 reads as the domain."""
        w = self.weights
        return np.array(
            [self.bias + sum(w.get(x, 0.0) for x in words_of(t)) for t in token_lists],
            dtype=np.float64,
        )

    def apply(self, probs: np.ndarray, token_lists: Sequence[Iterable[Token]]) -> np.ndarray:
        """``probs`` with the rows of the domain's items tempered by ``temperature``, the
        others by ``outside``; same shape and dtype. Probabilities of 0 stay 0 (their log is
        clipped)."""
        p = np.asarray(probs)
        inside = self.logits(token_lists) > 0
        if inside.any():
            p = temper(p, inside, self.temperature)
        if self.outside != 1.0 and not inside.all():
            p = temper(p, ~inside, self.outside)
        return p

    def to_file(self, directory: Path) -> None:
        words = {k: self.weights[k] for k in sorted(self.weights)}
        (Path(directory) / DOMAIN_FILE).write_text(
            json.dumps({"name": self.name, "bias": self.bias, "weights": words}) + "\n"
        )

    @classmethod
    def of(cls, metadata: Mapping, model_dir: Path) -> DomainTemperature | None:
        """The artifact's domain temperature, checked; None when it has none."""
        cal = metadata.get("calibration")
        info = cal.get("domain") if isinstance(cal, Mapping) else None
        if info is None:
            return None
        where = Path(model_dir) / DOMAIN_FILE
        try:
            t = float(info["temperature"])
            outside = float(info.get("outside_temperature", 1.0))
            raw = json.loads(where.read_text())
            bias = float(raw["bias"])
            weights = {str(k): float(v) for k, v in raw["weights"].items()}
        except (OSError, KeyError, TypeError, ValueError, AttributeError) as e:
            raise ArtifactError(f"{model_dir}: calibration.domain or {DOMAIN_FILE}: {e}") from e
        if raw.get("name") != info.get("name"):
            raise ArtifactError(
                f"{model_dir}: {DOMAIN_FILE} is for domain {raw.get('name')!r}, the metadata "
                f"names {info.get('name')!r}"
            )
        numbers = [t, outside, bias, *weights.values()]
        if not (all(math.isfinite(v) for v in numbers) and t > 0 and outside > 0):
            raise ArtifactError(
                f"{model_dir}: calibration.domain needs temperatures > 0 and finite weights"
            )
        return cls(str(info["name"]), bias, weights, t, outside)


def temper(probs: np.ndarray, rows: np.ndarray, t: float) -> np.ndarray:
    """``probs`` with ``rows`` (a mask) replaced by ``softmax(log p / t)``; same dtype."""
    p = np.asarray(probs)
    out = p.copy()
    z = np.log(np.clip(p[rows].astype(np.float64), 1e-12, 1.0)) / t
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out[rows] = (e / e.sum(axis=1, keepdims=True)).astype(p.dtype)
    return out


def fit_temperatures(
    logits: np.ndarray, y: np.ndarray, rows: np.ndarray, t: float
) -> tuple[float, float]:
    """The domain's temperature and the others', relative to the graph's ``t``: each the
    NLL-optimal temperature of its side's ``logits`` (``rows``: the domain's items) over ``t``
    (torch's L-BFGS, ``calibration.fit_temperature``)."""
    from absa.model.calibration import fit_temperature

    z, y = np.asarray(logits), np.asarray(y)
    return fit_temperature(z[rows], y[rows]) / t, fit_temperature(z[~rows], y[~rows]) / t


def fit_words(
    word_sets: Sequence[frozenset[str]], inside: Sequence[bool]
) -> tuple[float, dict[str, float]]:
    """A logistic regression (scikit-learn, L2, lbfgs: deterministic) of "in the domain" on
    which words a sentence holds, over the words of at least ``MIN_SENTENCES`` sentences:
    its bias and a weight per word. ValueError unless both sides have sentences."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    if len(set(inside)) < 2:
        raise ValueError("a domain classifier needs sentences in the domain and outside it")
    counts = Counter(w for s in word_sets for w in s)
    keep = {w for w, c in counts.items() if c >= MIN_SENTENCES}
    vectors = DictVectorizer(sort=True)
    x = vectors.fit_transform([{w: 1.0 for w in s if w in keep} for s in word_sets])
    fitted = LogisticRegression(max_iter=2000).fit(x, np.asarray(inside, dtype=bool))
    vocab = vectors.get_feature_names_out()
    weights = {str(w): float(c) for w, c in zip(vocab, fitted.coef_[0], strict=True) if c != 0.0}
    return float(fitted.intercept_[0]), weights
