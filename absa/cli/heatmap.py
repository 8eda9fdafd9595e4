"""The attention heatmap in a terminal: ANSI background shades, or [brackets] without colour."""

from __future__ import annotations

import os
import unicodedata
from typing import TextIO

# 256-colour backgrounds from pale to strong yellow/orange
_SHADES = (231, 230, 229, 228, 227, 226, 220, 214, 208, 202)


def use_color(stream: TextIO) -> bool:
    """Shades on a terminal, unless NO_COLOR is set (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _visible(text: str) -> str:
    """``text`` with its control characters as symbols: an escape sequence in a user's
    text must not drive the terminal, nor a newline break the heatmap's line. C0 controls
    as their control pictures (ESC as U+241B), others (C1) as U+FFFD."""
    if text.isprintable():
        return text
    return "".join(
        (chr(0x2400 + ord(c)) if ord(c) < 0x20 else "\u2421" if c == "\x7f" else "\ufffd")
        if unicodedata.category(c) == "Cc"
        else c
        for c in text
    )


def render(text: str, results: list[dict], color: bool) -> str:
    text = _visible(text)  # one code point for one: the offsets still hold
    lines = []
    for r in results:
        weights = r.get("attention") or []
        top = max((w["weight"] for w in weights), default=1.0) or 1.0
        parts, pos = [], 0
        for w in weights:
            parts.append(text[pos : w["start"]])
            word = text[w["start"] : w["end"]]
            level = w["weight"] / top
            if color:
                shade = _SHADES[min(len(_SHADES) - 1, int(level * (len(_SHADES) - 1) + 0.5))]
                parts.append(f"\x1b[48;5;{shade}m\x1b[30m{word}\x1b[0m")
            else:
                parts.append(f"[{word} {w['weight']:.2f}]" if level >= 0.5 else word)
            pos = w["end"]
        parts.append(text[pos:])
        scores = " ".join(f"{k}={v:.2f}" for k, v in r["scores"].items())
        what = f"{r['term']!r} [{r['start']}:{r['end']}]" if "term" in r else r["category"]
        lines.append(f"{what} -> {r['label']} ({scores})")
        lines.append("  " + "".join(parts))
    return "\n".join(lines)
