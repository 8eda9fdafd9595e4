"""One prediction path: preprocess -> forward -> postprocess, as in the transformers pipelines.

    aspects (terms or pinned spans) --preprocess--> spans + encoded items
    encoded items                   --forward-----> onnxruntime outputs (batched)
    outputs                         --postprocess-> AspectPrediction per span

The HTTP routes (forward through the micro-batcher), ``absa predict``, file scoring, the web
page and the Python API all go through a ``Predictor``, so the same input gets the same
answer on every path. No torch, no HTTP: bad input raises ``InputError`` / ``LimitError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np

from absa.errors import InputError, LimitError
from absa.model.aspects import (
    MAX_TERM_CHARS,
    Span,
    check_unicode,
    occurrences,
    pinned,
    shown,
    shown_value,
)
from absa.model.runtime import Output, Runtime, word_weights, words
from absa.model.text import Encoded, TextError

if TYPE_CHECKING:
    from absa.model.extractor import Extractor
    from absa.model.spans import FoundSpan

#: an aspect as callers give it: a term looked up in the text (every occurrence), or a span
#: pinned by the caller (a ``Span`` or any object / mapping with term, start, end)
AspectInput: TypeAlias = str | Span | Mapping[str, Any] | Any
#: what to classify: the aspects as given, or None / "auto": the ones the extractor finds
Aspects: TypeAlias = Sequence[AspectInput] | Literal["auto"] | None
AUTO = "auto"


@dataclass(frozen=True)
class Limits:
    """Request limits the service applies (None: no limit, as in the CLI and the Python API)."""

    max_text_chars: int | None = None
    max_aspects: int | None = None


@dataclass(frozen=True)
class WordWeight:
    token: str
    start: int
    end: int
    weight: float
    oov: bool = False  # the model's vocabulary does not know the word


@dataclass(frozen=True)
class AspectPrediction:
    """The answer for one aspect occurrence: ``text[start:end] == term``."""

    term: str
    start: int
    end: int
    label: str
    score: float  # the winning probability
    # the fields held in lists and dicts are compared, not hashed: an answer is hashable
    # (a set member, a key), equal answers hash alike, and the hash needs no more than these
    scores: dict[str, float] = field(hash=False)  # every label's probability
    attention: list[WordWeight] | None = field(default=None, hash=False)  # with explain
    self_attention: list[list[float]] | None = field(default=None, hash=False)  # per head
    extracted: float | None = None  # found by the extractor: its confidence in the span

    @property
    def span(self) -> tuple[int, int]:
        return self.start, self.end

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict; the explain-only fields only when present."""
        out: dict[str, Any] = {
            "term": self.term,
            "start": self.start,
            "end": self.end,
            "label": self.label,
            "score": self.score,
            "scores": dict(self.scores),
        }  # by hand: dataclasses.asdict deep-copies, a cost on every request
        out = add_explained(out, self.attention, self.self_attention)
        if self.extracted is not None:
            out["extracted"] = {"confidence": self.extracted}
        return out


def add_explained(
    out: dict[str, Any],
    attention: list[WordWeight] | None,
    self_attention: list[list[float]] | None,
) -> dict[str, Any]:
    """``out`` with the explain-only fields added where present."""
    if attention is not None:
        out["attention"] = [
            {"token": w.token, "start": w.start, "end": w.end, "weight": w.weight, "oov": w.oov}
            for w in attention
        ]
    if self_attention is not None:
        out["self_attention"] = [list(head) for head in self_attention]
    return out


@dataclass(frozen=True)
class Prepared:
    """A validated, encoded request: what ``forward`` runs and ``postprocess`` answers."""

    text: str
    spans: list[Span]
    items: list[Encoded]
    explain: bool = False


def _pinned_fields(aspect: Any, where: str = "") -> tuple[str, int, int] | None:
    """(term, start, end) of an aspect given as a span; None for a plain term. ``where``
    names the aspect ("aspects[1]: "), as every other aspect error does."""
    if isinstance(aspect, str):
        return None
    if isinstance(aspect, Mapping):
        try:
            return aspect["term"], aspect["start"], aspect["end"]
        except KeyError as e:
            raise InputError(
                f"{where}an aspect span needs term, start and end (missing {e})"
            ) from None
    if all(hasattr(aspect, k) for k in ("term", "start", "end")):
        return aspect.term, aspect.start, aspect.end
    raise InputError(
        f"{where}an aspect is a term (str) or a span with term, start, end, not "
        f"{type(aspect).__name__} {shown_value(aspect)}"
    )


class RuntimeModel:
    """A runtime and the limits to apply; thread-safe (it holds no per-call state). The
    base of ``Predictor`` (aspect terms) and ``CategoryPredictor`` (aspect categories): each
    adds ``preprocess`` (-> an object with ``items``) and ``postprocess``."""

    def __init__(
        self, runtime: Runtime, limits: Limits | None = None, extractor: Extractor | None = None
    ) -> None:
        self.runtime = runtime
        self.limits = limits or Limits()
        self.labels: list[str] = list(runtime.labels)
        self.extractor = extractor

    @property
    def metadata(self) -> dict:
        return self.runtime.metadata

    @property
    def model_id(self) -> str:
        return f"{self.metadata.get('name')}:{self.metadata.get('version')}"

    def forward(
        self, items: Sequence[Encoded], explain: bool = False, max_batch: int | None = None
    ) -> list[Output]:
        """One or more onnxruntime calls (bucketed by length, ``max_batch`` per call, None:
        the runtime's); the self-attention maps only fetched when some answer explains
        itself."""
        return self.runtime.run(items, self_attention=explain, max_batch=max_batch)

    def postprocess(self, prepared: Any, outputs: Sequence[Output]) -> list:
        raise NotImplementedError

    def predict_many(self, prepared: Sequence[Any], max_batch: int | None = None) -> list[list]:
        """Several prepared requests in one forward pass (the runtime batches them,
        ``max_batch`` aspects per call; None: the runtime's own)."""
        explain = any(p.explain for p in prepared)
        outputs = self.forward([it for p in prepared for it in p.items], explain, max_batch)
        answers, k = [], 0
        for p in prepared:
            answers.append(self.postprocess(p, outputs[k : k + len(p.items)]))
            k += len(p.items)
        return answers

    def warmup(self) -> None:
        self.runtime.warmup()


class Predictor(RuntimeModel):
    """Aspect terms: a runtime of a term model and the limits to apply; thread-safe."""

    # ------------------------------------------------------------------ preprocess

    def resolve(self, text: str, aspects: Aspects, where: str = "") -> list[Span]:
        """Every aspect's span(s): a term found several times gives each occurrence, and a
        span asked for twice ("burger" and "Burger", or a term and its pinned span) is
        answered once, where it was first asked for; no aspects (None or "auto"): the spans
        the extractor finds."""
        lim = self.limits
        check_text(text, lim, where)
        if aspects is None or (isinstance(aspects, str) and aspects == AUTO):
            return self.extract(text, where)
        if isinstance(aspects, str):  # one term, as ``Classifier`` takes it: not its letters
            aspects = [aspects]
        if not aspects:
            raise InputError(
                f"{where}aspects is empty: name at least one aspect term, or leave aspects "
                "out to have them extracted"
            )
        if lim.max_aspects is not None and len(aspects) > lim.max_aspects:
            # before any lookup, as for categories: a term listed again is answered once,
            # and 1,000 copies of a long one were 1,000 searches of the text (16 s of CPU)
            raise LimitError(
                f"{where}too many aspects ({len(aspects)} listed; the limit is {lim.max_aspects})"
            )
        spans: list[Span] = []
        seen: set[tuple[int, int]] = set()
        for i, aspect in enumerate(aspects):
            at = f"{where}aspects[{i}]: "
            fields = _pinned_fields(aspect, at)
            term = aspect if fields is None else fields[0]
            if not isinstance(term, str):
                raise InputError(f"{at}the term is a {type(term).__name__}, not a string")
            check_unicode(term, "the aspect", at)
            found = (
                occurrences(text, term, at) if fields is None else [pinned(text, *fields, where=at)]
            )
            for span in found:
                if (span.start, span.end) not in seen:
                    seen.add((span.start, span.end))
                    spans.append(span)
            if lim.max_aspects is not None and len(spans) > lim.max_aspects:
                raise LimitError(
                    f"{where}too many aspects (over {lim.max_aspects}, counting each "
                    "occurrence of a repeated term)"
                )
        return spans

    def extract(self, text: str, where: str = "") -> list[Span]:
        """The aspect spans the extractor finds (none is a valid answer)."""
        found = self.extract_many([text], where)[0]
        lim = self.limits
        if lim.max_aspects is not None and len(found) > lim.max_aspects:
            raise LimitError(
                f"{where}the extractor found {len(found)} aspects; the limit is "
                f"{lim.max_aspects} a request: send the text in parts (a few sentences each)"
            )
        return found

    def extract_many(self, texts: Sequence[str], where: str = "") -> list[list[Span]]:
        """The aspect spans the extractor finds in each of ``texts``, tagged in batches (a
        file's chunk of rows at once); no limit applied. The texts are checked already."""
        if self.extractor is None:
            raise InputError(
                f"{where}no aspects given and no aspect extractor is configured (setting "
                "ABSA_EXTRACTOR): name at least one aspect term"
            )
        if not texts:
            return []
        # a sentence at a time, as the tagger was trained: a review of several lost a third
        # of its terms tagged whole
        found = self.extractor.extract(texts, by_sentence=True)
        return [self._readable(text, spans) for text, spans in zip(texts, found, strict=True)]

    def _readable(self, text: str, found: Sequence[FoundSpan]) -> list[Span]:
        """The spans of ``found`` the model can read, as ``Span`` with the confidence: a run
        of hundreds of words tagged as one term (a repeated word, say) is no term, and could
        not be sent back as an aspect; nor one of more tokens than the model reads at once
        ("a-a-a..."), which encode refuses: it would fail the whole request."""
        tok = self.runtime.tokenized(text)

        def readable(start: int, end: int) -> bool:
            try:
                self.runtime.encode_span(tok, start, end)
            except TextError:
                return False
            return end - start <= MAX_TERM_CHARS

        return [
            Span(text[f.start : f.end], f.start, f.end, round(f.confidence, 6))
            for f in found
            if readable(f.start, f.end)
        ]

    def encode(self, text: str, spans: Sequence[Span], where: str = "") -> list[Encoded]:
        out = []
        tok = self.runtime.tokenized(text)  # once per text, however many aspects
        for sp in spans:
            try:
                out.append(self.runtime.encode_span(tok, sp.start, sp.end))
            except TextError as err:
                raise InputError(
                    f"{where}aspect {shown(sp.term)} [{sp.start}, {sp.end}): {err}"
                ) from None
        return out

    def preprocess(
        self, text: str, aspects: Aspects, explain: bool = False, where: str = ""
    ) -> Prepared:
        spans = self.resolve(text, aspects, where)
        return Prepared(text, spans, self.encode(text, spans, where), explain)

    # ------------------------------------------------------------------ postprocess

    def postprocess(self, prepared: Prepared, outputs: Sequence[Output]) -> list[AspectPrediction]:
        return [
            self._prediction(sp, out, prepared.explain, prepared.text)
            for sp, out in zip(prepared.spans, outputs, strict=True)
        ]

    def _prediction(
        self, span: Span, out: Output, explain: bool, text: str | None = None
    ) -> AspectPrediction:
        label, score, scores, attention, self_attention = scored(self.labels, out, explain, text)
        return AspectPrediction(
            span.term,
            span.start,
            span.end,
            label,
            score,
            scores,
            attention,
            self_attention,
            span.confidence,
        )

    # ------------------------------------------------------------------ all three

    def __call__(
        self, text: str, aspects: Aspects, explain: bool = False
    ) -> list[AspectPrediction]:
        prepared = self.preprocess(text, aspects, explain)
        return self.postprocess(prepared, self.forward(prepared.items, explain))

    def warmup(self) -> None:
        self.runtime.warmup()
        if self.extractor is not None:
            self.extractor.warmup()


def check_text(text: str, limits: Limits, where: str = "") -> None:
    """InputError for a text that is not a string, is empty or has lone surrogates,
    LimitError past the limit."""
    if not isinstance(text, str):
        kind = "None" if text is None else type(text).__name__
        raise InputError(f"{where}the text must be a string, not {kind}")
    if not text.strip():
        raise InputError(f"{where}text is empty")
    if limits.max_text_chars is not None and len(text) > limits.max_text_chars:
        raise LimitError(
            f"{where}text has {len(text)} characters; the limit is {limits.max_text_chars}"
        )
    check_unicode(text, "the text", where)


#: label, score, scores, attention, self-attention: what every kind of prediction answers
Scored = tuple[str, float, dict[str, float], list[WordWeight] | None, list[list[float]] | None]


def scored(labels: Sequence[str], out: Output, explain: bool, text: str | None = None) -> Scored:
    """The winning label, its probability, every label's, and with ``explain`` the attention
    per word (and the self-attention rows of the aspect's words, for models that have it);
    ``text``: the request's, whose words the attention names."""
    scores = {lab: round(float(p), 6) for lab, p in zip(labels, out.probs, strict=True)}
    label = labels[int(np.argmax(out.probs))]
    attention = self_attention = None
    if explain:
        merged = words(out, text)
        attention = [WordWeight(t.text, t.start, t.end, round(w, 6), u) for t, w, u in merged]
        if out.self_attention is not None:
            self_attention = _aspect_rows(out)
    return label, scores[label], scores, attention, self_attention


def _aspect_rows(out: Output) -> list[list[float]]:
    """Per head: the aspect tokens' (mean) self-attention to every token, merged like the words."""
    asp = [i for i, m in enumerate(out.aspect_mask) if m]
    sw = out.self_attention  # (heads, T, T)
    assert sw is not None
    heads = []
    for h in range(sw.shape[0]):
        rows = sw[h][asp].mean(0) if asp else sw[h].mean(0)
        merged = word_weights(Output(out.probs, rows, out.tokens))
        heads.append([round(w, 6) for _, w in merged])
    return heads
