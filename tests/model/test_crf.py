"""The CRF tagger: the forward-algorithm loss, Viterbi with learned transitions against brute
force, a tagger that overfits a tiny set, and the transitions through export and serving."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from absa.errors import ArtifactError
from absa.model.crf import CRF
from absa.model.spans import TAGS, B, I, O, Transitions, decode, viterbi
from absa.model.text import Token
from tests.helpers import exported_with_transitions

K = len(TAGS)


def _decodable(path: tuple[int, ...]) -> bool:
    """The decoder's rules: I only after B or I, B only after O (spans never touch)."""
    pairs = zip((O, *path[:-1]), path, strict=True)
    return all(not (t == I and p == O) and not (t == B and p != O) for p, t in pairs)


def test_viterbi_with_learned_transitions_is_the_brute_force_best_path() -> None:
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 6))
        probs = rng.dirichlet(np.ones(K), size=n)
        learned = Transitions(rng.normal(0, 2, K), rng.normal(0, 2, (K, K)))
        logp = np.log(probs)

        def score(path: tuple[int, ...], logp: np.ndarray = logp, tr: Transitions = learned):
            s = tr.start[path[0]] + sum(logp[t, tag] for t, tag in enumerate(path))
            return s + sum(tr.pairs[a, b] for a, b in itertools.pairwise(path))

        paths = [p for p in itertools.product(range(K), repeat=n) if _decodable(p)]
        assert tuple(viterbi(probs, learned)) == max(paths, key=score)
    # zero transitions decode exactly as the plain decoder
    probs = rng.dirichlet(np.ones(K), size=7)
    assert viterbi(probs, Transitions(np.zeros(K), np.zeros((K, K)))) == viterbi(probs)


def test_crf_span_confidence_is_the_brute_force_marginal() -> None:
    """A CRF span's confidence: the probability, over every decodable tag sequence, that
    exactly this span is marked (B, then I's, then not I)."""
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(60):
        n = int(rng.integers(1, 6))
        probs = rng.dirichlet(np.ones(K), size=n)
        learned = Transitions(rng.normal(0, 2, K), rng.normal(0, 2, (K, K)))
        logp = np.log(probs)
        paths = [p for p in itertools.product(range(K), repeat=n) if _decodable(p)]
        weight = {
            p: np.exp(
                learned.start[p[0]]
                + sum(logp[t, tag] for t, tag in enumerate(p))
                + sum(learned.pairs[a, b] for a, b in itertools.pairwise(p))
            )
            for p in paths
        }
        z = sum(weight.values())
        tokens = [Token(f"w{t}", 3 * t, 3 * t + 2) for t in range(n)]
        for found in decode(probs, tokens, learned):
            i, j = found.start // 3, (found.end - 2) // 3 + 1  # words i..j-1
            exact = sum(
                w
                for p, w in weight.items()
                if p[i] == B and all(p[t] == I for t in range(i + 1, j)) and (j == n or p[j] != I)
            )
            assert found.confidence == pytest.approx(exact / z, rel=1e-9)
            assert 0.0 < found.confidence <= 1.0
            checked += 1
    assert checked > 20


def test_the_crf_loss_is_the_exact_negative_log_likelihood() -> None:
    torch.manual_seed(0)
    crf = CRF()
    with torch.no_grad():
        crf.start.normal_()
        crf.pairs.normal_()
    em = torch.randn(2, 4, K)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    tags = torch.tensor([[B, I, O, B], [O, B, B, 0]])
    start, pairs = crf._scores()

    def score(i: int, path: tuple[int, ...]) -> torch.Tensor:
        s = start[path[0]] + sum(em[i, t, tag] for t, tag in enumerate(path))
        return s + sum(pairs[a, b] for a, b in itertools.pairwise(path))

    want = []
    for i, n in enumerate(mask.sum(1).tolist()):
        all_paths = torch.stack([score(i, p) for p in itertools.product(range(K), repeat=n)])
        want.append(torch.logsumexp(all_paths, 0) - score(i, tuple(tags[i, :n].tolist())))
    got = crf.nll(em, tags, mask)
    torch.testing.assert_close(got, torch.stack(want).mean())
    # an I after O is impossible: its path costs the fixed penalty
    bad = crf.nll(em[:1], torch.tensor([[O, I, O, O]]), mask[:1])
    assert bad > 1000


def test_transitions_round_trip_through_export(crf_run: Path, tmp_path: Path) -> None:
    exported_with_transitions(crf_run, tmp_path / "x")


def test_a_crf_extractor_without_its_transitions_is_refused(crf_run: Path, tmp_path: Path) -> None:
    from absa.model import artifact
    from absa.model.extractor import Extractor
    from absa.training.tagging_run import export_tag_run

    out = tmp_path / "x"
    export_tag_run(crf_run, out, version="crf")
    changed = tmp_path / "changed"
    shutil.copytree(out, changed)
    spec = json.loads((changed / "transitions.json").read_text())
    spec["pairs"][0][1] += 1.0
    (changed / "transitions.json").write_text(json.dumps(spec))
    with pytest.raises(ArtifactError, match="transitions.json: sha256"):
        Extractor.load(changed, device="cpu")
    unlisted = tmp_path / "unlisted"  # the changed transitions, and no checksum to catch it
    shutil.copytree(changed, unlisted)
    meta = artifact.read_metadata(unlisted, artifact.EXTRACTOR_KIND)
    del meta["files"]["transitions.json"]
    artifact.write_metadata(unlisted, meta)
    with pytest.raises(ArtifactError, match="transitions.json' has no checksum"):
        Extractor.load(unlisted, device="cpu")
    (out / "transitions.json").unlink()
    with pytest.raises(ArtifactError, match="transitions.json"):
        Extractor.load(out, device="cpu")
