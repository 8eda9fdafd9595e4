"""GloVe-format text files passed by path (training/embeddings.py ``read_vectors``): the
shapes the Stanford files come in (glove.840B's words with spaces and non-UTF-8 bytes, a
word2vec header, CRLF, a BOM) and the ones refused in one line naming the file and line."""

from __future__ import annotations

import gzip
import logging
import zipfile
from pathlib import Path

import numpy as np
import pytest

from absa.cli import main
from absa.training.embeddings import read_vectors
from tests.helpers import synthetic_examples, tiny_config, write_jsonl


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_well_formed_file_reads_as_written(tmp_path: Path) -> None:
    v = read_vectors(str(write(tmp_path / "g.txt", b"the 0.1 0.2 0.3\ncat 1 2 3\n")))
    assert v.words == ["the", "cat"] and v.malformed == 0
    assert v.matrix.dtype == np.float32 and v.matrix.shape == (2, 3)
    np.testing.assert_array_equal(v.matrix, np.array([[0.1, 0.2, 0.3], [1, 2, 3]], np.float32))


def test_a_word_with_spaces_is_passed_over_not_a_failure_of_the_whole_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """glove.840B has a few entries such as ". . ." and "at name@domain.com": no token has
    a space, so they are passed over (counted), and the file still loads."""
    data = b"the 0.1 0.2 0.3\n. . . 0.4 0.5 0.6\nat name@domain.com 1 1 1\ncat 0.7 0.8 0.9\n"
    path = write(tmp_path / "g.txt", data)
    with caplog.at_level(logging.WARNING):
        v = read_vectors(str(path))
    assert v.words == ["the", "cat"] and v.malformed == 2
    np.testing.assert_array_equal(v.matrix[1], np.array([0.7, 0.8, 0.9], np.float32))
    said = [r.getMessage() for r in caplog.records]
    assert any(
        s.startswith(f"{path}: 2 lines whose word has spaces skipped (the first is line 2)")
        for s in said
    )


def test_a_line_with_one_number_too_many_is_still_refused_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "g.txt", b"the 0.1 0.2 0.3\ncat 9 0.7 0.8 0.9\n")
    with pytest.raises(ValueError, match=rf"^{path}:2: expected 3 numbers, got 4"):
        read_vectors(str(path))


def test_non_utf8_lines_are_passed_over_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """glove.840B has a few lines that are not UTF-8: before, one UnicodeDecodeError with
    neither the file nor the line, and the file could not be used at all."""
    path = write(tmp_path / "g.txt", b"the 0.1 0.2 0.3\n\xff\xfeab 0.4 0.5 0.6\ncat 1 2 3\n")
    with caplog.at_level(logging.WARNING):
        v = read_vectors(str(path))
    assert v.words == ["the", "cat"] and v.malformed == 1
    said = [r.getMessage() for r in caplog.records]
    assert any(s.startswith(f"{path}: 1 lines not UTF-8") and "line 2" in s for s in said)


def test_a_bom_is_not_part_of_the_first_word(tmp_path: Path) -> None:
    v = read_vectors(str(write(tmp_path / "g.txt", b"\xef\xbb\xbfthe 0.1 0.2 0.3\ncat 1 2 3\n")))
    assert v.words == ["the", "cat"] and v.malformed == 0


def test_a_bom_before_a_word2vec_header(tmp_path: Path) -> None:
    v = read_vectors(
        str(write(tmp_path / "g.txt", b"\xef\xbb\xbf2 3\nthe 0.1 0.2 0.3\ncat 1 2 3\n"))
    )
    assert v.words == ["the", "cat"] and v.malformed == 0


def test_crlf_and_a_header_read_as_lf(tmp_path: Path) -> None:
    v = read_vectors(str(write(tmp_path / "g.txt", b"2 3\r\nthe 0.1 0.2 0.3\r\ncat 1 2 3\r\n")))
    assert v.words == ["the", "cat"] and v.malformed == 0 and v.matrix.shape == (2, 3)


def test_a_header_whose_dimension_disagrees_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "g.txt", b"2 300\nthe 0.1 0.2 0.3\ncat 1 2 3\n")
    with pytest.raises(ValueError, match=rf"^{path}:2: expected 300 numbers .*got 3"):
        read_vectors(str(path))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e40"])
def test_a_value_that_is_not_finite_is_refused_with_its_line(tmp_path: Path, value: str) -> None:
    path = write(tmp_path / "g.txt", f"the 0.1 0.2 0.3\ncat 1 {value} 3\n".encode())
    with pytest.raises(ValueError, match=rf"^{path}:2: .*not a finite number"):
        read_vectors(str(path))


def test_a_repeated_word_keeps_its_first_vector(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """GloVe files are in frequency order: the first is the word's vector. Kept twice, the
    last won every lookup ({w: i}) and --expand-vocab added the word twice."""
    path = write(tmp_path / "g.txt", b"the 0.1 0.2 0.3\ncat 1 2 3\nthe 4 5 6\n")
    with caplog.at_level(logging.WARNING):
        v = read_vectors(str(path))
    assert v.words == ["the", "cat"]
    np.testing.assert_array_equal(v.matrix[0], np.array([0.1, 0.2, 0.3], np.float32))
    assert any(
        "1 repeated words" in r.getMessage() and "line 3" in r.getMessage() for r in caplog.records
    )


def test_a_gzip_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "glove.txt.gz"
    path.write_bytes(gzip.compress(b"the 0.1 0.2 0.3\n"))
    with pytest.raises(ValueError, match=rf"^{path}: gzip-compressed"):
        read_vectors(str(path))


def test_a_zip_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "glove.6B.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("glove.6B.50d.txt", "the 0.1 0.2 0.3\n")
    with pytest.raises(ValueError, match=rf"^{path}: a zip archive"):
        read_vectors(str(path))


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    with pytest.raises(OSError, match=rf"^{tmp_path}: a directory, not a GloVe file"):
        read_vectors(str(tmp_path))


def test_a_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FileNotFoundError, match="no such GloVe file$"):
        read_vectors(str(tmp_path / "nope.txt"))
    # a relative path (a config's, beside which the file was): where it was looked for
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as e:
        read_vectors("vecs.txt")
    assert str(e.value) == f"vecs.txt: no such GloVe file (looked for in {tmp_path})"


def test_an_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "g.txt", b"")
    with pytest.raises(ValueError, match=rf"^{path}: no vectors found"):
        read_vectors(str(path))


def test_train_with_a_non_utf8_vectors_file_says_one_line(
    tmp_path: Path, small_glove: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`absa train` with a gzip file as train.glove: one line naming it, exit 2."""
    bad = tmp_path / "glove.txt.gz"
    bad.write_bytes(gzip.compress(small_glove.read_bytes()))
    data = write_jsonl(tmp_path / "train.jsonl", synthetic_examples(12, seed=0))
    cfg = tiny_config(tmp_path / "c.json", bad)
    capsys.readouterr()
    code = main(
        [
            "train",
            "--train",
            str(data),
            "--dev",
            str(data),
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith(f"absa train: error: {bad}: gzip-compressed")
    assert not any("Traceback" in line for line in err)
