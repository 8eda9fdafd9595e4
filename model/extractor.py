"""Run an exported aspect term tagger with onnxruntime: text -> aspect spans. No torch.

``Extractor.load`` opens an artifact of kind ``absa-extractor`` through
``absa.model.artifact.load`` (the same checks as a sentiment model: every file hashed,
recorded parity; a sentiment artifact is refused, and the sentiment runtime refuses this
one), then ``extract`` tags texts in batches and decodes each window with
``absa.model.spans.decode`` (BIO-constrained Viterbi, with a CRF tagger's learned
transitions from ``transitions.json``; the confidence is defined there).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from absa.errors import ArtifactError
from absa.model import artifact
from absa.model.graph_labels import check_graph_labels
from absa.model.piecetext import PieceTagText
from absa.model.runtime import open_session
from absa.model.sentence_split import per_sentence
from absa.model.spans import TRANSITIONS_FILE, FoundSpan, Transitions, decode
from absa.model.tagtext import CHARS_FILE, TagText, Window, load_tag_text

log = logging.getLogger(__name__)

DEFAULT_EXTRACTOR_DIR = Path(__file__).resolve().parent / "artifacts" / "extractor"


class Extractor:
    def __init__(
        self,
        model_dir: Path,
        metadata: dict,
        text: TagText | PieceTagText,
        session,
        learned: Transitions | None = None,
    ) -> None:
        self.model_dir = model_dir
        self.learned = learned  # a CRF tagger's transition scores
        self.metadata = metadata
        self.text = text
        self.session = session
        self.input_names = [i.name for i in session.get_inputs()]

    @property
    def model_id(self) -> str:
        return f"{self.metadata.get('name')}:{self.metadata.get('version')}"

    @classmethod
    def load(
        cls,
        model_dir: Path | str,
        device: str = "auto",
        threads: int = 0,
        require_parity: bool = True,
    ) -> Extractor:
        art = artifact.load(model_dir, require_parity=require_parity, kind=artifact.EXTRACTOR_KIND)
        artifact.require_checksum(art, CHARS_FILE, "character list")
        artifact.require_checksum(art, TRANSITIONS_FILE, "CRF transitions")
        try:
            text = load_tag_text(art.directory)
        except (OSError, ValueError) as e:
            raise ArtifactError(f"{art.directory}: tagger text pipeline: {e}") from None
        n_chars = int(art.metadata.get("model_config", {}).get("char_vocab_size", 0))
        if n_chars != len(text.chars or []):
            raise ArtifactError(
                f"{art.directory}: the model reads {n_chars} characters but the artifact "
                f"lists {len(text.chars or [])}"
            )
        learned = None
        if art.metadata.get("model_config", {}).get("crf"):
            try:
                learned = Transitions.load(art.directory)
            except (OSError, ValueError, KeyError) as e:
                raise ArtifactError(f"{art.directory}: CRF transitions: {e}") from None
        session = open_session(art.onnx_path, device, threads)
        check_graph_labels(session, art.metadata["labels"], art.directory)
        log.info(
            "loaded extractor %s on %s", art.metadata.get("version"), session.get_providers()[0]
        )
        return cls(art.directory, art.metadata, text, session, learned)

    def probs(self, windows: Sequence[Window]) -> list[np.ndarray]:
        """Per-word tag probabilities (T_i, K) for each window: one session call."""
        feeds = self.text.feeds(windows)
        (probs,) = self.session.run(None, {k: feeds[k] for k in self.input_names})
        return [probs[i, : len(w.tokens)] for i, w in enumerate(windows)]

    def window_probs(
        self, texts: Sequence[str], max_batch: int = 64
    ) -> tuple[list[list[Window]], list[list[np.ndarray]]]:
        """Each text's windows and their per-word tag probabilities, batched by length."""
        windows = [self.text.encode(t) for t in texts]
        flat = [w for ws in windows for w in ws]
        order = sorted(range(len(flat)), key=lambda i: len(flat[i].ids))
        probs: list[np.ndarray] = [np.empty(0)] * len(flat)
        for s in range(0, len(order), max_batch):
            idx = order[s : s + max_batch]
            for i, p in zip(idx, self.probs([flat[i] for i in idx]), strict=True):
                probs[i] = p
        out, k = [], 0
        for ws in windows:
            out.append(probs[k : k + len(ws)])
            k += len(ws)
        return windows, out

    def extract(
        self, texts: Sequence[str], max_batch: int = 64, by_sentence: bool = False
    ) -> list[list[FoundSpan]]:
        """The aspect spans found in each text, in text order (``decode_text``).
        ``by_sentence``: each sentence of a text tagged on its own (``per_sentence``), as
        the tagger was trained, its spans put back at their place in the text; tagged whole,
        a review of five sentences lost a third of its terms, most in the later sentences."""
        if by_sentence:
            return per_sentence(
                texts,
                lambda pieces: self.extract(pieces, max_batch),
                lambda f, at: replace(f, start=f.start + at, end=f.end + at),
            )
        windows, probs = self.window_probs(texts, max_batch)
        return [
            decode_text(text, ws, ps, self.learned, self.text.encode, self.probs)
            for text, ws, ps in zip(texts, windows, probs, strict=True)
        ]

    def warmup(self) -> None:
        self.extract(["The food was great ."])


def decode_text(
    text: str,
    windows: Sequence[Window],
    probs: Sequence[np.ndarray],
    learned: Transitions | None,
    encode: Callable[[str], list[Window]],
    tag: Callable[[list[Window]], list[np.ndarray]],
) -> list[FoundSpan]:
    """The aspect spans of one text from its windows' per-word tag probabilities, as served
    and as training scores its dev set (``tag``: onnxruntime or torch; ``encode``: the
    tagger's text pipeline). A text of one window is decoded as it is; a longer one (more
    words than a window holds) is tagged again in windows across each seam, every word takes
    its tags from the window where it sits furthest from an edge, and the whole text is
    decoded at once: a term across a seam is one term, tagged with context on both sides
    (back-to-back windows cut it in two)."""
    if len(windows) <= 1:
        return [
            f for w, p in zip(windows, probs, strict=True) for f in decode(p, w.tokens, learned)
        ]
    tokens, rows = stitched(text, windows, probs, encode, tag)
    return decode(rows, tokens, learned)


def stitched(
    text: str,
    windows: Sequence[Window],
    probs: Sequence[np.ndarray],
    encode: Callable[[str], list[Window]],
    tag: Callable[[list[Window]], list[np.ndarray]],
) -> tuple[list, np.ndarray]:
    """The text's words and, per word, the tag probabilities of the window (the given ones,
    or one across each seam: from the middle of a window to the middle of the next) in which
    the word has the most words on its shorter side."""
    tokens = [t for w in windows for t in w.tokens]
    firsts = np.cumsum([0] + [len(w.tokens) for w in windows])
    best: list[tuple[int, np.ndarray | None]] = [(-1, None)] * len(tokens)

    def offer(first: int, rows: np.ndarray) -> None:
        for j, row in enumerate(rows):
            side = min(j, len(rows) - 1 - j)
            if side > best[first + j][0]:
                best[first + j] = (side, row)

    for first, rows in zip(firsts, probs, strict=False):
        offer(int(first), rows)
    seams = []
    for k in range(len(windows) - 1):
        a = int(firsts[k] + len(windows[k].tokens) // 2)
        b = int(firsts[k + 1] + len(windows[k + 1].tokens) // 2)
        across = encode(text[tokens[a].start : tokens[b - 1].end])
        if len(across) == 1 and len(across[0].tokens) == b - a:  # the same words
            seams.append((a, across[0]))
    for (a, _), rows in zip(seams, tag([w for _, w in seams]) if seams else [], strict=True):
        offer(a, rows)
    chosen = [row for _, row in best if row is not None]
    assert len(chosen) == len(tokens), "every word is in one of the windows, so offered"
    return tokens, np.stack(chosen)
