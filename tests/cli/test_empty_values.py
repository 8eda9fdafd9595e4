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
    ],
)
def test_an_empty_path_flag_is_refused_naming_it(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(DATA)
    argv = [str(data) if a == "DATA" else a for a in argv]
    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2
    flag = next(a for a, b in zip(argv, argv[1:], strict=False) if not b.strip())
    err = capsys.readouterr().err
    assert f"argument {flag}: empty" in err, err
