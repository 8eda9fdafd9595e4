"""The terminal heatmap of `absa predict --explain`."""

from __future__ import annotations

from absa.cli.heatmap import render

TEXT = "The fries were soggy but the burger was great"
RESULT = {
    "term": "fries",
    "start": 4,
    "end": 9,
    "label": "negative",
    "scores": {"negative": 0.8, "neutral": 0.1, "positive": 0.1},
    "attention": [
        {"token": w, "start": TEXT.index(w), "end": TEXT.index(w) + len(w), "weight": x}
        for w, x in [("The", 0.02), ("fries", 0.05), ("soggy", 0.8), ("great", 0.13)]
    ],
}


def test_plain_marks_the_heavy_words_and_keeps_the_text() -> None:
    out = render(TEXT, [RESULT], color=False)
    head, body = out.splitlines()
    assert head.startswith("'fries' [4:9] -> negative")
    assert "[soggy 0.80]" in body and "[great" not in body
    assert body.replace("[soggy 0.80]", "soggy").strip() == TEXT


def test_colour_shades_every_weighted_word() -> None:
    out = render(TEXT, [RESULT], color=True)
    body = out.splitlines()[1]
    assert body.count("\x1b[48;5;") == 4 and body.count("\x1b[0m") == 4
    strongest = "\x1b[48;5;202m\x1b[30msoggy\x1b[0m"
    assert strongest in body
