"""The 3-line format (SemEval-2014 .seg files, Twitter): the sentence with the aspect replaced
by ``$T$``, the aspect term, the polarity."""

from __future__ import annotations

from absa.training.readers.files import physical_lines, refuse_bare_cr
from absa.training.readers.sink import Sink

PLACEHOLDER = "$T$"
_THREE_LINES = "(sentence with $T$, aspect term, polarity)"


def read_3line(text: str, sink: Sink) -> None:
    path = sink.path
    refuse_bare_cr(text, path)
    lines = physical_lines(text)
    while lines and not lines[-1]:
        lines.pop()
    i = 0
    while i < len(lines):
        if not lines[i].strip():  # a blank line between records (a sentence is never blank)
            i += 1
            continue
        if len(lines) - i < 3:
            have = sum(1 for line in lines[i:] if line.strip())
            why = f"truncated record: {have} line(s) where 3 are expected"
            sink.bad(f"{path}:{i + 1}", f"{why} {_THREE_LINES}")
            break
        first = i + 1  # 1-based line of the record's sentence
        source = f"{path}:{first}"
        sentence, term, polarity = lines[i], lines[i + 1].strip(), lines[i + 2]
        # a record short of a line: the next sentence comes in its place, and the reader goes
        # on from there (three lines at a time, every record after it was read lines off)
        ahead = next((k for k in (1, 2) if PLACEHOLDER in lines[i + k]), None)
        start = sentence.find(PLACEHOLDER)
        if start < 0:  # the line is a whole sentence
            i += ahead or 3
            why = f"no {PLACEHOLDER} placeholder in the sentence"
            sink.bad(f"{path}:{first}", why, sentence)
            continue
        if ahead is not None:
            i += ahead
            missing = "aspect term and polarity lines" if ahead == 1 else "term or polarity line"
            why = f"its {missing} missing: line {first + ahead} is the next sentence"
            sink.bad(f"{path}:{first + 1}", why, sentence)
            continue
        i += 3
        if not term:
            sink.bad(f"{path}:{first + 1}", "empty aspect term")
            continue
        full_text = sentence.replace(PLACEHOLDER, term)
        label = sink.label(polarity, f"{path}:{first + 2}", full_text)
        if label is None:
            continue
        sink.repeated += sentence.count(PLACEHOLDER) > 1
        sink.add(full_text, start, start + len(term), label, source, f"{path}:{first}")
