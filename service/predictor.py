"""From a request to results: aspects -> spans -> encoded items -> labels, scores, attention."""

from __future__ import annotations

import numpy as np

from model.runtime import Output, Runtime, word_weights
from model.text import Encoded, TextError, find_all
from service.schemas import AspectResult, AspectSpan, PredictRequest, TokenWeight
from service.settings import Settings


class RequestError(Exception):
    """A bad request: ``status`` (422, 413) and a message that says what is wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def resolve_spans(
    req: PredictRequest, settings: Settings, where: str = ""
) -> list[tuple[str, int, int]]:
    """(term, start, end) for every aspect; a string found several times gives each occurrence."""
    text = req.text
    if not text.strip():
        raise RequestError(422, f"{where}text is empty")
    if len(text) > settings.max_text_chars:
        raise RequestError(
            413, f"{where}text has {len(text)} characters; the limit is {settings.max_text_chars}"
        )
    if not req.aspects:
        raise RequestError(
            422,
            f"{where}aspects is empty: name at least one aspect term (aspect extraction is "
            "not supported yet)",
        )
    spans: list[tuple[str, int, int]] = []
    for i, a in enumerate(req.aspects):
        if isinstance(a, AspectSpan):
            if not (0 <= a.start < a.end <= len(text)):
                raise RequestError(
                    422,
                    f"{where}aspects[{i}]: span [{a.start}, {a.end}) is outside the text "
                    f"(length {len(text)})",
                )
            if text[a.start : a.end] != a.term:
                raise RequestError(
                    422,
                    f"{where}aspects[{i}]: text[{a.start}:{a.end}] is "
                    f"{text[a.start : a.end]!r}, not the term {a.term!r}",
                )
            spans.append((a.term, a.start, a.end))
        else:
            if not a.strip():
                raise RequestError(422, f"{where}aspects[{i}] is empty")
            found = find_all(text, a)
            if not found:
                raise RequestError(422, f"{where}aspects[{i}]: {a!r} does not occur in the text")
            spans.extend((text[s:e], s, e) for s, e in found)
        if len(spans) > settings.max_aspects:
            raise RequestError(
                413,
                f"{where}too many aspects (over {settings.max_aspects}, counting each "
                "occurrence of a repeated term)",
            )
    return spans


def encode_spans(
    runtime: Runtime, text: str, spans: list[tuple[str, int, int]], where: str = ""
) -> list[Encoded]:
    out = []
    for term, s, e in spans:
        try:
            out.append(runtime.encode(text, s, e))
        except TextError as err:
            raise RequestError(422, f"{where}aspect {term!r} [{s}, {e}): {err}") from None
    return out


def to_result(
    runtime: Runtime, span: tuple[str, int, int], out: Output, explain: bool
) -> AspectResult:
    term, s, e = span
    scores = {lab: round(float(p), 6) for lab, p in zip(runtime.labels, out.probs, strict=True)}
    res = AspectResult(
        term=term, start=s, end=e, label=runtime.labels[int(np.argmax(out.probs))], scores=scores
    )
    if explain:
        words = word_weights(out)
        res.attention = [
            TokenWeight(token=t.text, start=t.start, end=t.end, weight=round(w, 6))
            for t, w in words
        ]
        if out.self_attention is not None:
            res.self_attention = _aspect_rows(out, len(words))
    return res


def _aspect_rows(out: Output, n_words: int) -> list[list[float]]:
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
