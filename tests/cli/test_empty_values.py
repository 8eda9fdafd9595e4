"""An empty value, such as `--model "$RUN"` with RUN unset, is an error that names the flag
or the variable. It used to read as no flag at all, so a command scored the shipped model
and said nothing. An empty ABSA_* path variable read as the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from absa.cli import main

DATA = '{"text": "The fries were soggy", "aspect": "fries", "label": "negative"}\n'


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "--model", "", "--text", "The fries were soggy", "--aspect", "fries"],
        ["predict", "--extractor", "", "--text", "The fries were soggy"],
        ["evaluate", "--model", "", "--data", "DATA"],
        ["serve", "--model", ""],
        ["serve", "--registry", ""],
        ["serve", "--category-model", ""],
        ["serve", "--extractor", ""],
        ["predict", "--text", "The fries were soggy", "--aspect", "fries", "--input", ""],
        ["predict", "--input", "DATA", "--output", " "],
        ["models", "--registry", "", "list"],
        ["models", "list", "--registry", "  "],
        ["evaluate", "--data", ""],
        ["evaluate", "--data", "DATA", ""],
        ["train", "--train", "", "--out", "OUT"],
        ["train", "--train", "DATA", "--dev", "", "--out", "OUT"],
        ["train", "--train", "DATA", "--eval", " ", "--out", "OUT"],
        ["train", "--train", "DATA", "--exclude", "", "--out", "OUT"],
        ["train", "--train", "DATA", "--train-more", "", "--out", "OUT"],
        ["train", "--train", "DATA", "--transfer", "", "--out", "OUT"],
        ["train", "--train", "DATA", "--out", ""],
        ["export", "--run", "", "--out", "OUT"],
        ["export", "--run", "DATA", "--out", "OUT", "--name", ""],
        ["export", "--run", "DATA", "--out", "OUT", "--version", " "],
        ["retrain", "--config", "DATA", "--version", ""],
    ],
)
def test_an_empty_path_flag_is_refused_naming_it(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(DATA)
    argv = [str(data) if a == "DATA" else a for a in argv]
    argv = [str(tmp_path / "run") if a == "OUT" else a for a in argv]
    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2
    empty = next(i for i, a in enumerate(argv) if not a.strip())
    flag = next(a for a in reversed(argv[:empty]) if a.startswith("--"))  # a list's flag
    err = capsys.readouterr().err
    assert f"argument {flag}: empty" in err, err
    assert not (tmp_path / "run").exists()
