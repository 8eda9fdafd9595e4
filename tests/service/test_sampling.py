"""ABSA_SAMPLE_PATH: the service keeps a sample of its answers (a share of the requests, and
every answer less sure than ABSA_SAMPLE_BELOW) as JSON lines that become a training file once
a person adds each line's label: the loop from serving back to `absa retrain`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from absa.service.app import create_app
from absa.service.sampling import AnswerSample
from absa.training.readers import read_examples
from tests.service.conftest import make_settings

TEXT = "the wine list was great but the food was awful"
OTHER = "the service was slow"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def sample_lines(client: TestClient, labels: dict[str, str]) -> float:
    from tests.service.test_reload import metric_samples

    text = client.get("/metrics").text
    (value,) = [v for lab, v in metric_samples(text, "absa_sample_lines_total") if lab == labels]
    return value


def test_a_sampled_answer_is_a_training_record_once_labelled(
    artifact: Path, tmp_path: Path
) -> None:
    sample = tmp_path / "sample.jsonl"
    settings = make_settings(artifact, sample_path=sample, sample_rate=1.0, sample_below=0.0)
    with TestClient(create_app(settings)) as c:
        one = c.post(
            "/v1/predict",
            json={"text": TEXT, "aspects": ["food", "wine list"]},
            headers={"X-Request-ID": "req-1"},
        )
        batch = c.post(
            "/v1/predict/batch",
            json={"items": [{"text": OTHER, "aspects": ["service"]}, {"text": 3}]},
        )
        assert one.status_code == 200 and batch.status_code == 200
        wrote = {"kind": "term", "result": "written"}
        deadline = time.monotonic() + 10  # the lines go to the file from a thread
        while sample_lines(c, wrote) < 3:
            assert time.monotonic() < deadline, c.get("/metrics").text
            time.sleep(0.05)
        assert sample_lines(c, {"kind": "term", "result": "dropped"}) == 0  # at 0 from the start
    # written by the time the app has stopped; the invalid batch item is not an answer
    got = lines(sample)
    answers = [*one.json()["results"], *batch.json()["items"][0]["results"]]
    assert [(g["text"], g["aspect"], g["start"], g["end"]) for g in got] == [
        (TEXT, "food", 32, 36),
        (TEXT, "wine list", 4, 13),
        (OTHER, "service", 4, 11),
    ]
    for g, a in zip(got, answers, strict=True):
        assert (g["predicted"], g["score"], g["scores"]) == (a["label"], a["score"], a["scores"])
        assert g["model"] == one.json()["model"] and g["time"].endswith("Z")
        assert g["kept"] == "random"  # the unbiased share (rate 1), not the unsure answers
        assert "label" not in g  # for the person who labels it
    assert got[0]["request_id"] == got[1]["request_id"] == "req-1"
    assert got[2]["request_id"] == batch.headers["x-request-id"]
    # labelled (here: as predicted), the sample reads as a training file, spans and all
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps({**g, "label": g["predicted"]}) + "\n" for g in got))
    examples = read_examples(labelled).examples
    assert [(e.text, e.start, e.end, e.label) for e in examples] == [
        (g["text"], g["start"], g["end"], g["predicted"]) for g in got
    ]


def test_answers_less_sure_than_the_bar_are_all_kept(artifact: Path, tmp_path: Path) -> None:
    """ABSA_SAMPLE_BELOW: the unsure answers, the ones most worth a person's label, are kept
    whatever the rate; the sure ones of the same request are not. The same text sent three
    times is kept once (it was three times, three lines for a person to label alike); another
    aspect of it, and the same aspect of another text, are answers of their own."""
    request = {"text": TEXT, "aspects": ["food", "wine list"]}
    with TestClient(create_app(make_settings(artifact))) as c:
        scores = [r["score"] for r in c.post("/v1/predict", json=request).json()["results"]]
    assert scores[0] != scores[1]
    bar = sum(scores) / 2
    sample = tmp_path / "sample.jsonl"
    settings = make_settings(artifact, sample_path=sample, sample_rate=0.0, sample_below=bar)
    unsure = request["aspects"][scores.index(min(scores))]
    again = {"text": TEXT + "!", "aspects": [unsure]}
    with TestClient(create_app(settings)) as c:
        for _ in range(3):
            assert c.post("/v1/predict", json=request).status_code == 200
        assert c.post("/v1/predict", json=again).json()["results"][0]["score"] < bar
        assert sample_lines(c, {"kind": "term", "result": "repeated"}) == 2
    assert [(g["text"], g["aspect"]) for g in lines(sample)] == [
        (TEXT, unsure),
        (TEXT + "!", unsure),
    ]
    # said on each line: a labelled sample that mixes both can be reweighted
    assert {g["kept"] for g in lines(sample)} == {"unsure"}


def test_the_random_share_keeps_repeats(tmp_path: Path) -> None:
    """The random share is a sample of the traffic as it comes, repeats and all; an unsure
    answer after it about the same text and aspect is not kept again."""
    answer = {"term": "food", "start": 4, "end": 8, "label": "positive", "score": 0.4,
              "scores": {"negative": 0.3, "neutral": 0.3, "positive": 0.4}}  # fmt: skip
    draws = iter([0.1, 0.1, 0.9])
    sample = AnswerSample(tmp_path / "s.jsonl", rate=0.5, below=0.5, draw=lambda: next(draws))
    for request in ("r1", "r2", "r3"):
        sample.offer([("the food", "m:1", [answer])], request)
    sample.close()
    assert [g["kept"] for g in lines(tmp_path / "s.jsonl")] == ["random", "random"]


def test_without_a_path_nothing_is_written(
    artifact: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """And a rate set for a sample that has no path is said (it was ignored unsaid)."""
    settings = make_settings(artifact, sample_rate=1.0, sample_below=1.0)
    with caplog.at_level("WARNING"), TestClient(create_app(settings)) as c:
        assert c.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]}).status_code == 200
    assert list(tmp_path.iterdir()) == []
    said = "ABSA_SAMPLE_BELOW, ABSA_SAMPLE_RATE set without ABSA_SAMPLE_PATH: no answers are kept"
    assert said in caplog.text


@pytest.mark.parametrize("rate", ["-0.1", "1.5", "nan"])
def test_a_rate_that_is_not_a_share_is_refused(rate: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from absa.settings import Settings

    monkeypatch.setenv("ABSA_SAMPLE_RATE", rate)
    with pytest.raises(ValidationError, match="sample_rate"):
        Settings()


def test_the_rate_draws_once_a_request(tmp_path: Path) -> None:
    """A batch's items are one request: drawn once, its kept lines one write."""
    from absa.service.sampling import AnswerSample

    draws: list[int] = []
    sample = AnswerSample(
        tmp_path / "s.jsonl", rate=0.5, below=0.0, draw=lambda: draws.append(1) or 0.1
    )
    answer = {"term": "food", "start": 4, "end": 8, "label": "positive", "score": 0.9,
              "scores": {"negative": 0.05, "neutral": 0.05, "positive": 0.9}}  # fmt: skip
    sample.offer([("the food", "m:1", [answer]), ("the food", "m:1", [answer])], "r1")
    sample.close()
    assert draws == [1] and len(lines(tmp_path / "s.jsonl")) == 2


CUT = """
import resource, signal, sys
from pathlib import Path
from absa.service.sampling import AnswerSample

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit: a short write, then EFBIG
sample = AnswerSample(Path(sys.argv[1]), rate=1.0, below=0.0)
line = b'{"n": %d, "pad": "' + b"x" * 80 + b'"}\\n'  # 100 bytes
unlimited = resource.RLIM_INFINITY
resource.setrlimit(resource.RLIMIT_FSIZE, (250, unlimited))  # a disk that fills mid-line
sample.append(line % 1 + line % 2 + line % 3)
sample.append(line % 4)  # still full: lost whole
resource.setrlimit(resource.RLIMIT_FSIZE, (unlimited, unlimited))  # room again
sample.append(line % 5)
sample.close()
"""


def test_a_line_cut_short_by_a_full_disk_is_not_glued_to_the_next(tmp_path: Path) -> None:
    """The kernel writes what fits and says how much: the rest of the lines were dropped
    unsaid, and the next request's lines went on from inside the cut one, so that line and
    the next both stopped the retraining job (not JSON)."""
    import subprocess
    import sys

    from tests.service.conftest import ROOT

    path = tmp_path / "s.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", CUT, str(path)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    got = path.read_bytes().split(b"\n")
    assert got[-1] == b"" and len(got) == 5, got  # four lines, the last one ended
    assert [json.loads(got[i])["n"] for i in (0, 1, 3)] == [1, 2, 5]
    assert got[2] == (b'{"n": 3, "pad": "' + b"x" * 80)[:50]  # the cut line, alone
    said = [line for line in done.stderr.splitlines() if "line(s) lost" in line]
    assert len(said) == 2, done.stderr
    assert said[0].endswith("1 line(s) lost, the first cut short")  # line 3
    assert said[1].endswith("1 line(s) lost")  # line 4, whole


def test_the_sample_stops_at_its_size_cap(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """ABSA_SAMPLE_MAX_MB: at a share of the traffic the file grew for ever, until the disk
    the service (and its logs) write to was full. Past the cap lines are dropped, said once;
    a file made smaller (rotated, truncated) takes lines again."""
    from absa.service.sampling import AnswerSample

    path = tmp_path / "s.jsonl"
    line = b'{"n": 1}\n'  # 9 bytes
    counts = {"written": 0, "dropped": 0}  # what absa_sample_lines_total is told

    def counted(result: str, n: int) -> None:
        counts[result] += n

    sample = AnswerSample(path, rate=1.0, below=0.0, max_bytes=30, counted=counted)
    with caplog.at_level("WARNING", logger="absa.service.sampling"):
        for _ in range(6):
            sample.append(line)
        assert path.stat().st_size == 36  # the write that reached 30 was the last whole one
        said = [r.message for r in caplog.records if "cap" in r.message]
        assert len(said) == 1 and "30 bytes" in said[0], said
        # said once in the log; every line dropped is counted (from the monitoring review)
        assert counts == {"written": 4, "dropped": 2}
        path.write_bytes(b"")  # logrotate's copytruncate
        sample.append(line)
    sample.close()
    assert path.read_bytes() == line and counts == {"written": 5, "dropped": 2}


def test_an_answer_dropped_at_the_cap_is_kept_after_a_rotation(tmp_path: Path) -> None:
    """An unsure answer dropped at the cap was remembered as kept: sent again after the file
    was rotated, it was a repeat, never written (from the soak review)."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"x" * 40 + b"\n")  # at its cap of 30 bytes
    counts = {"written": 0, "dropped": 0, "repeated": 0}

    def counted(result: str, n: int) -> None:
        counts[result] += n

    sample = AnswerSample(path, rate=0.0, below=0.5, max_bytes=30, counted=counted)
    unsure = {"term": "zorp", "start": 4, "end": 8, "label": "neutral", "score": 0.47,
              "scores": {"negative": 0.2, "neutral": 0.47, "positive": 0.33}}  # fmt: skip
    answered = [("the zorp was okay", "m:1", [unsure])]
    sample.offer(answered, "r1")
    deadline = time.monotonic() + 10
    while counts["dropped"] < 1:  # the writer's thread drops it
        assert time.monotonic() < deadline, counts
        time.sleep(0.01)
    path.write_bytes(b"")  # logrotate's copytruncate
    sample.offer(answered, "r2")
    sample.offer(answered, "r3")  # kept now: a repeat
    sample.close()
    assert [g["request_id"] for g in lines(path)] == ["r2"]
    assert counts == {"written": 1, "dropped": 1, "repeated": 1}


#: one answer of 10,000 characters' text, as the routes offer them to the sample
LONG_ANSWER = [
    (
        "f" * 10_000,
        "m",
        [{"term": "food", "start": 0, "end": 4, "label": "positive", "score": 0.9,
          "scores": {"positive": 0.9}}],
    )
]  # fmt: skip


def stalled_sample(tmp_path: Path) -> tuple[AnswerSample, int]:
    """A sample writing to a stalled disk: a named pipe, its reading end (returned) open and
    never read, so that a write blocks once the pipe's 64 KiB are full."""
    import os

    path = tmp_path / "stalled"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    return AnswerSample(path, rate=1.0, below=0.0), reader


def test_answers_queued_for_a_stalled_disk_are_bounded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The lines waited for the writer in an unbounded queue: on a volume that stalls (an
    NFS server gone, a disk that hangs) every answer kept piled up in the worker's memory
    until it was killed for it. Past MAX_QUEUED_BYTES the new lines are dropped, said once
    a backlog; the queued ones are written once the disk takes them again. A named pipe no
    one reads stands in for the stalled disk."""
    import os
    import threading
    import time

    from absa.service.sampling import MAX_QUEUED_BYTES

    sample, reader = stalled_sample(tmp_path)
    offers = 3 * MAX_QUEUED_BYTES // 10_000
    with caplog.at_level("WARNING", logger="absa.service.sampling"):
        for _ in range(offers):
            sample.offer(LONG_ANSWER, "r")
        assert sample.queued_bytes <= MAX_QUEUED_BYTES
    said = [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]
    assert len(said) == 1, said
    got = bytearray()
    closing = threading.Thread(target=sample.close)  # writes what is queued, then closes
    closing.start()
    while True:  # the disk is back: read until the writer has closed its end (b"")
        try:
            chunk = os.read(reader, 1 << 20)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if not chunk:
            break
        got += chunk
    closing.join()
    os.close(reader)
    kept = got.count(b"\n")
    assert 0 < kept < offers and kept * 10_000 <= MAX_QUEUED_BYTES + 200_000


def test_closing_on_a_stalled_disk_gives_up_after_its_wait(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """close() waited for the writer for ever: a worker whose sample's volume stalled never
    finished its shutdown (killed at the end of its grace period, the requests in flight
    with it). It waits CLOSE_WAIT_S, then says how much was not written."""
    import os
    import time

    from absa.service.sampling import CLOSE_WAIT_S

    sample, reader = stalled_sample(tmp_path)
    for _ in range(20):  # 200 KB: past the pipe's 64 KiB
        sample.offer(LONG_ANSWER, "r")
    start = time.monotonic()
    with caplog.at_level("ERROR", logger="absa.service.sampling"):
        sample.close()
    assert CLOSE_WAIT_S <= time.monotonic() - start < CLOSE_WAIT_S + 5
    said = [r.getMessage() for r in caplog.records if "at shutdown" in r.getMessage()]
    assert len(said) == 1 and "bytes of lines not written" in said[0], said
    os.close(reader)  # the writer's blocked write ends (EPIPE): its thread ends too


def test_category_answers_go_to_a_category_training_file(
    artifact: Path, category_artifact: Path, tmp_path: Path
) -> None:
    """A category model's answers are category records once labelled (text, category,
    label): they go beside the term sample, as answers.categories.jsonl, read by the
    category reader; the term file keeps term records alone."""
    from absa.training.category_readers import read_categories

    sample = tmp_path / "answers.jsonl"
    settings = make_settings(
        artifact, category_model=category_artifact, sample_path=sample, sample_rate=1.0
    )
    text = "the food was great but the service was slow"
    with TestClient(create_app(settings)) as c:
        cats = c.post("/v1/predict", json={"text": text, "categories": ["food", "service"]})
        terms = c.post("/v1/predict", json={"text": text, "aspects": ["food"]})
        assert cats.status_code == 200 and terms.status_code == 200
    got = lines(tmp_path / "answers.categories.jsonl")
    answers = cats.json()["results"]
    assert [(g["text"], g["category"], g["predicted"], g["score"]) for g in got] == [
        (text, a["category"], a["label"], a["score"]) for a in answers
    ]
    assert [g["aspect"] for g in lines(sample)] == ["food"]
    labelled = tmp_path / "labelled.categories.jsonl"
    labelled.write_text("".join(json.dumps({**g, "label": g["predicted"]}) + "\n" for g in got))
    examples = read_categories(labelled).examples
    assert [(e.text, e.category, e.label) for e in examples] == [
        (g["text"], g["category"], g["predicted"]) for g in got
    ]


def counting() -> tuple[dict[str, int], Callable[[str, int], None]]:
    counts = {"written": 0, "dropped": 0, "repeated": 0}

    def counted(result: str, n: int) -> None:
        counts[result] += n

    return counts, counted


@pytest.mark.parametrize("how", ["moved", "removed", "replaced"])
def test_a_file_moved_or_replaced_at_the_path_is_followed(tmp_path: Path, how: str) -> None:
    """``mv answers.jsonl to-label.jsonl`` (a batch taken to label), logrotate's ``create``
    and an editor's save (``sed -i``: a new file at the path) left the worker writing into
    the old file: every later line went to a file no one read, or to none, counted as
    written and said nowhere."""
    import os

    path = tmp_path / "s.jsonl"
    counts, counted = counting()
    sample = AnswerSample(path, rate=1.0, below=0.0, counted=counted)
    sample.append(b'{"n": 1}\n')
    if how == "moved":
        path.rename(tmp_path / "to-label.jsonl")
    elif how == "removed":
        path.unlink()
    else:
        (tmp_path / "edited").write_bytes(path.read_bytes() + b'{"n": 1, "label": "x"}\n')
        os.replace(tmp_path / "edited", path)
    sample.append(b'{"n": 2}\n')
    sample.close()
    assert lines(path)[-1] == {"n": 2}
    assert len(lines(path)) == (3 if how == "replaced" else 1)
    if how == "moved":
        assert lines(tmp_path / "to-label.jsonl") == [{"n": 1}]
    assert counts["written"] == 2
    if how != "replaced":  # made anew: 0600 as the first was (a file put there keeps its own)
        assert path.stat().st_mode & 0o777 == 0o600


def test_a_path_that_cannot_be_opened_drops_its_lines_and_never_stops_the_worker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its folder gone (moved, a volume not mounted) when a worker started in place of one
    that died: the worker stopped with a traceback, and the whole server with it (exit 70).
    The sample is optional: its lines are dropped, counted and said once, until it can be
    opened again."""
    folder = tmp_path / "samples"
    counts, counted = counting()
    with caplog.at_level("INFO", logger="absa.service.sampling"):
        sample = AnswerSample(folder / "s.jsonl", rate=1.0, below=0.0, counted=counted)
        sample.append(b'{"n": 1}\n')
        sample.append(b'{"n": 2}\n')
        folder.mkdir()  # mounted again
        sample.append(b'{"n": 3}\n')
        sample.close()
    assert lines(folder / "s.jsonl") == [{"n": 3}]
    assert counts == {"written": 1, "dropped": 2, "repeated": 0}
    said = [r.message for r in caplog.records if "cannot be opened" in r.message]
    assert len(said) == 1 and "No such file or directory" in said[0], said
    assert "answer sample" in caplog.text and "writing again" in caplog.text


def test_a_fifo_without_a_reader_is_not_waited_on(tmp_path: Path) -> None:
    """A FIFO with no reader blocked the worker's start for good (SIGTERM could not stop
    it): its lines are dropped until a reader opens it, as for a path whose folder is gone.
    A character device is refused."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    counts, counted = counting()
    sample = AnswerSample(fifo, rate=1.0, below=0.0, counted=counted)
    sample.append(b'{"n": 1}\n')
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    sample.append(b'{"n": 2}\n')
    sample.close()
    assert os.read(reader, 100) == b'{"n": 2}\n'
    os.close(reader)
    assert counts["dropped"] == 1 and counts["written"] == 1
    device = AnswerSample(Path("/dev/null"), rate=1.0, below=0.0, counted=counted)
    device.append(b'{"n": 3}\n')
    device.close()
    assert counts["dropped"] == 2


def test_the_shadows_answer_to_a_line_kept_at_random_is_kept_too(tmp_path: Path) -> None:
    """A line of the random share is written before the shadow scores its text: the
    shadow's other label for it was then a repeat, dropped, so the unbiased lines were the
    ones that never carried the shadow's answer. A second disagreement is a repeat."""
    answer = {"term": "food", "start": 4, "end": 8, "label": "positive", "score": 0.9,
              "scores": {"negative": 0.05, "neutral": 0.05, "positive": 0.9}}  # fmt: skip
    theirs = {**answer, "shadow": {"label": "negative"}}
    counts, counted = counting()
    sample = AnswerSample(tmp_path / "s.jsonl", rate=1.0, below=0.5, counted=counted)
    sample.offer([("the food", "m:1", [answer])], "r1")
    sample.offer([("the food", "m:1", [theirs])], "r1", disagreed=True)
    sample.offer([("the food", "m:1", [theirs])], "r2", disagreed=True)
    sample.close()
    got = lines(tmp_path / "s.jsonl")
    assert [(g["kept"], g["request_id"], "shadow" in g) for g in got] == [
        ("random", "r1", False),
        ("disagreed", "r1", True),
    ]
    assert counts["repeated"] == 1


def test_a_worker_starts_and_answers_while_its_sample_folder_is_gone(
    artifact: Path, tmp_path: Path
) -> None:
    """A worker started in place of one that died while the sample's folder was gone (moved,
    a volume not mounted) stopped in os.open with a traceback, and the server with it."""
    path = tmp_path / "gone" / "answers.jsonl"
    settings = make_settings(artifact, sample_path=path, sample_rate=1.0)
    with TestClient(create_app(settings)) as c:
        assert c.post("/v1/predict", json={"text": TEXT, "aspects": ["food"]}).status_code == 200
        deadline = time.monotonic() + 10
        while sample_lines(c, {"kind": "term", "result": "dropped"}) < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    assert not path.parent.exists()


@pytest.mark.parametrize(
    ("first", "kept"),
    [
        # the shadow's answer after the served one's line: written; a second: a repeat
        (["random", "disagreed", "disagreed"], ["random", "disagreed"]),
        (["unsure", "disagreed"], ["unsure", "disagreed"]),
        # once a disagreed line is kept, a random one after it does not let the next through
        (["disagreed", "random", "disagreed"], ["disagreed", "random"]),
    ],
)
def test_which_lines_of_one_answer_are_kept(
    tmp_path: Path, first: list[str], kept: list[str]
) -> None:
    unsure = {"term": "food", "start": 4, "end": 8, "label": "positive", "score": 0.4,
              "scores": {"negative": 0.3, "neutral": 0.3, "positive": 0.4}}  # fmt: skip
    theirs = {**unsure, "shadow": {"label": "negative"}}
    draws = iter([0.0 if k == "random" else 0.9 for k in first if k != "disagreed"])
    sample = AnswerSample(tmp_path / "s.jsonl", rate=0.5, below=0.5, draw=lambda: next(draws))
    for i, k in enumerate(first):
        if k == "disagreed":
            sample.offer([("the food", "m:1", [theirs])], f"r{i}", disagreed=True)
        else:
            sample.offer([("the food", "m:1", [unsure])], f"r{i}")
    sample.close()
    assert [g["kept"] for g in lines(tmp_path / "s.jsonl")] == kept


def test_a_close_that_fails_leaves_the_writer_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On NFS close(2) may fail (EIO): the writer's thread died of it when the file was
    moved, every later line piling up in memory and close() closing a stale descriptor."""
    import errno
    import os

    from absa.service import sampling

    path = tmp_path / "s.jsonl"
    counts, counted = counting()
    sample = AnswerSample(path, rate=1.0, below=0.0, counted=counted)
    held, real_close = sample._fd, os.close

    def failing(fd: int) -> None:
        real_close(fd)
        if fd == held:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(sampling.os, "close", failing)
    path.rename(tmp_path / "batch.jsonl")
    sample.offer(LONG_ANSWER, "r1")
    sample.offer(LONG_ANSWER, "r2")
    sample.close()
    assert [g["request_id"] for g in lines(path)] == ["r1", "r2"] and counts["written"] == 2
