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


def test_control_characters_in_the_text_reach_the_terminal_as_symbols() -> None:
    """The text is the user's (or a file's): an escape sequence in it would recolour or
    rewrite the terminal, a newline would break the heatmap's line."""
    text = "The \x1b[2Jfries were\nsoggy\x9b"
    start = text.index("fries")
    result = {**RESULT, "start": start, "end": start + 5, "attention": [
        {"token": "fries", "start": start, "end": start + 5, "weight": 1.0},
    ]}  # fmt: skip
    for color in (False, True):
        body = render(text, [result], color=color).splitlines()[1:]
        assert len(body) == 1
        assert "\x1b[2J" not in body[0] and "\n" not in body[0] and "\x9b" not in body[0]
        assert "\u241b[2J" in body[0]  # ESC shown as its control picture


def test_no_color_turns_the_shades_off(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import io

    from absa.cli.heatmap import use_color

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(Tty()) and not use_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")  # https://no-color.org: set and not empty
    assert not use_color(Tty())
