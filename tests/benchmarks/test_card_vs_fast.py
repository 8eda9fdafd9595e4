"""benchmarks/card_vs_fast.py: issue #11 item 1's verdict, the card against `fast` over seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import card_vs_fast

SETS = card_vs_fast.DATASETS


def _result(path: Path, acc: float, f1: float, **override: tuple[float, float]) -> None:
    """A result file of either kind: every test set at ``acc`` / ``f1`` % unless overridden."""
    test = {}
    for k in SETS:
        a, f = override.get(k, (acc, f1))
        test[k] = {"accuracy": a / 100, "macro_f1": f / 100, "n": 100}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"test": test}))


def _distill(results: Path, short: str, seed: int) -> Path:
    return results / "distill" / f"union-{short}-{card_vs_fast.RECIPE}.s{seed}.json"


def _served(results: Path, short: str, seed: int) -> Path:
    return results / "served" / f"test-{short}-oof-s{seed}.json"


def test_means_over_the_seeds_both_have_decide_each_number(tmp_path: Path) -> None:
    # card: seeds 1 and 2 at 80 / 75, but Lap14 F1 70 in seed 1 and 74 in seed 2 (mean 72);
    # fast: 79 / 74 everywhere but Lap14 F1 73; fast's seed 3 (no card seed 3) would lower
    # its means if it counted
    card = [_distill(tmp_path, "card-x", s) for s in (1, 2)]
    _result(card[0], 80, 75, lap14=(80, 70))
    _result(card[1], 80, 75, lap14=(80, 74))
    for s in (1, 2):
        _result(_distill(tmp_path, "fast-x", s), 79, 74, lap14=(79, 73))
    _result(_distill(tmp_path, "fast-x", 3), 10, 10)

    assert sorted(card_vs_fast.seed_files("fast-x", "fp32", tmp_path)) == [1, 2, 3]
    text = card_vs_fast.table(["card-x"], ["fast-x"], "fp32", tmp_path)
    assert "mean of seeds 1, 2 (2 a network):" in text
    assert "| lap14 F1 | 72.00 | 73.00 | no | -1.00, 2.83 |" in text  # -3 and +1
    assert "| rest14 acc | 80.00 | 79.00 | yes | +1.00, 0.00 |" in text
    assert "card level or ahead on 7 of 8 numbers" in text


def test_a_tie_counts_as_level_and_served_files_are_read_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _result(_served(tmp_path, "card-x", 1), 72.54, 70.83)
    _result(_served(tmp_path, "fast-x", 1), 72.54, 70.83)
    assert (
        card_vs_fast.main(["--card", "card-x", "--fast", "fast-x", "--results", str(tmp_path)]) == 0
    )
    out = capsys.readouterr().out
    assert "fp32: no seed that both card-x and fast-x have" in out
    assert "served, mean of seeds 1 (1 a network):" in out
    assert "| mams F1 | 70.83 | 70.83 | yes | +0.00, – |" in out  # one pair: no sd
    assert "card level or ahead on 8 of 8 numbers" in out


def test_a_network_whose_name_extends_another_is_not_mixed_in(tmp_path: Path) -> None:
    _result(_served(tmp_path, "card", 1), 70, 70)
    _result(_served(tmp_path, "card-lite", 1), 90, 90)
    assert card_vs_fast.seed_files("card", "served", tmp_path) == {1: _served(tmp_path, "card", 1)}


def test_series_pair_by_position_and_pool_their_seeds(tmp_path: Path) -> None:
    """Two series of students (two input builds): the card's first against fast's first,
    its second against fast's second; a seed only one of a pair has is left out."""
    _result(_served(tmp_path, "card-a", 1), 80, 70)
    _result(_served(tmp_path, "fast-a", 1), 80, 74)
    _result(_served(tmp_path, "card-b", 1), 80, 76)
    _result(_served(tmp_path, "fast-b", 1), 80, 73)
    _result(_served(tmp_path, "fast-b", 2), 10, 10)
    text = card_vs_fast.table(["card-a", "card-b"], ["fast-a", "fast-b"], "served", tmp_path)
    assert "mean of seeds 1 of card-a; 1 of card-b (2 a network):" in text
    assert "| rest14 F1 | 73.00 | 73.50 | no | -0.50, 4.95 |" in text  # -4 and +3
    assert "| rest14 acc | 80.00 | 80.00 | yes | +0.00, 0.00 |" in text
    with pytest.raises(ValueError, match="pairs"):
        card_vs_fast.table(["card-a", "card-b"], ["fast-a"], "served", tmp_path)


def test_the_dev_parts_are_compared_over_the_seed_pairs_with_every_source(
    tmp_path: Path,
) -> None:
    """dev_by_source is keyed by training file: each maps to its test set's name; a seed
    whose record lacks a source (an older run) is left out of the dev table."""
    files = {k: f"../shared/data/{card_vs_fast.FILES[k]['train']}" for k in SETS}
    for short, seed, mams in (("c", 1, 0.80), ("c", 2, 0.84), ("f", 1, 0.83), ("f", 2, 0.83)):
        path = _distill(tmp_path, short, seed)
        _result(path, 80, 75)
        record = json.loads(path.read_text())
        record["dev_by_source"] = {f: 0.75 for f in files.values()} | {files["mams"]: mams}
        path.write_text(json.dumps(record))
    _result(_distill(tmp_path, "c", 3), 80, 75)  # no dev_by_source
    _result(_distill(tmp_path, "f", 3), 80, 75)
    assert card_vs_fast.dev_scores(_distill(tmp_path, "c", 3)) == {}
    rows = card_vs_fast.dev_table(["c"], ["f"], tmp_path).splitlines()
    assert rows[0] == "dev accuracy by source, mean of 2 seed pairs (fp32):"
    assert "| mams | 82.00 | 83.00 | -1.00, 2.83 |" in rows
    assert "| lap14 | 75.00 | 75.00 | +0.00, 0.00 |" in rows
    assert card_vs_fast.dev_table(["c"], ["x"], tmp_path).startswith("dev by source: no seed")


def test_the_seeds_without_a_pair_are_named_as_left_out(tmp_path: Path) -> None:
    """Five card seeds against three of fast's: the means are over three pairs, and the table
    says which seeds it left out, of either network and series; none: no such line."""
    for s in (1, 2, 3, 4, 5):
        _result(_served(tmp_path, "card-a", s), 80, 75)
    for s in (1, 2, 3):
        _result(_served(tmp_path, "fast-a", s), 79, 74)
    _result(_served(tmp_path, "card-b", 1), 80, 75)
    _result(_served(tmp_path, "fast-b", 2), 79, 74)
    text = card_vs_fast.table(["card-a"], ["fast-a"], "served", tmp_path)
    assert "mean of seeds 1, 2, 3 (3 a network):" in text
    assert "left out, no seed of the other network to pair with: 4, 5 of card-a\n" in text
    text = card_vs_fast.table(["card-a", "card-b"], ["fast-a", "fast-b"], "served", tmp_path)
    assert (
        "left out, no seed of the other network to pair with: "
        "4, 5 of card-a; 1 of card-b; 2 of fast-b" in text
    )
    text = card_vs_fast.table(["card-b"], ["fast-b"], "served", tmp_path)
    assert text.startswith("served: no seed that both card-b and fast-b have\nleft out")
    text = card_vs_fast.table(["card-a"], ["fast-a"], "fp32", tmp_path)  # no fp32 files at all
    assert "left out" not in text
    _result(_served(tmp_path, "fast-a", 4), 79, 74)
    _result(_served(tmp_path, "fast-a", 5), 79, 74)
    assert "left out" not in card_vs_fast.table(["card-a"], ["fast-a"], "served", tmp_path)


def test_a_run_with_more_transfer_files_is_found_and_two_for_a_seed_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """recipe_students.sh names a run with TRANSFER_MORE's files after them
    (...-lap4-more-subst-rest3.sN): its fp32 files are found under its short name; a short
    name with files of both kinds for one seed is an error that names them, not a silent
    pick; --names labels the two sides (two recipes of the card, not card and fast)."""
    more = tmp_path / "distill" / f"union-c-rest3-{card_vs_fast.RECIPE}-subst-rest3.s1.json"
    _result(more, 81, 76)
    _result(_distill(tmp_path, "c", 1), 80, 75)
    assert card_vs_fast.seed_files("c-rest3", "fp32", tmp_path) == {1: more}
    assert card_vs_fast.seed_files("c", "fp32", tmp_path) == {1: _distill(tmp_path, "c", 1)}
    text = card_vs_fast.table(["c-rest3"], ["c"], "fp32", tmp_path, ("copies", "none"))
    assert "| rest14 acc | 81.00 | 80.00 | yes | +1.00, – |" in text
    assert "| test set | c-rest3 | c | copies level or ahead | copies - none, sd over" in text
    assert "copies level or ahead on 8 of 8 numbers" in text

    _result(tmp_path / "distill" / f"union-c-{card_vs_fast.RECIPE}-subst-x.s1.json", 70, 70)
    with pytest.raises(ValueError, match="two result files for seed 1 of c: "):
        card_vs_fast.seed_files("c", "fp32", tmp_path)
    with pytest.raises(SystemExit) as exit_:
        card_vs_fast.main(["--card", "c-rest3", "--fast", "c", "--results", str(tmp_path)])
    assert exit_.value.code == 2
    assert "two result files for seed 1 of c" in capsys.readouterr().err
