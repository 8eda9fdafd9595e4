"""A client that connects and then sends its request slowly, or never, is let go after
``client_timeout_s``: a body that has not all arrived by then is a 408 (the app, under
uvicorn in a thread), and a connection whose request headers have not (``absa serve``'s
protocol) is closed. Without them each such connection was held for ever: enough of them
use up the process's file descriptors."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import absa_serve, make_settings, serve


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _read_all(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (b"": closed, nothing said)."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def _one_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length, read off a connection left open, and not a byte
    more: a response pipelined behind it (sent in the same packet) stays for the next call."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):  # a byte at a time: the head's end is not known
        byte = sock.recv(1)
        assert byte, f"the connection was closed: {head!r}"
        head += byte
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        assert chunk, f"the connection was closed: {head + body!r}"
        body += chunk
    return head + body


def _error_answer(answer: bytes) -> tuple[dict[str, str], dict]:
    """The headers and JSON body of an answer in the service's one error shape, with a
    fresh X-Request-ID, on a connection then closed."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")[1:]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    assert headers["content-type"] == "application/json", answer
    assert headers["connection"] == "close", answer
    assert re.fullmatch(r"[0-9a-f]{32}", headers.get("x-request-id", "")), answer
    assert int(headers["content-length"]) == len(body), answer
    said = json.loads(body)
    assert set(said) == {"detail"} and isinstance(said["detail"], str), said
    return headers, said


BAD_REQUESTS = [
    b"FOO /v1/predict HTTP/1.1\r\nHost: x\r\n\r\n",  # no such method token
    b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    b"\x16\x03\x01 not http at all\r\n\r\n",  # a request line of garbage (a TLS hello)
]


def test_a_request_the_parser_refuses_is_a_400_in_the_error_shape(
    artifact: Path, tmp_path: Path
) -> None:
    """uvicorn answered these with a text/plain "Invalid HTTP request received." and no
    X-Request-ID: every other answer of the service is JSON and carries one."""
    with absa_serve(artifact, tmp_path) as url:
        ids = []
        for request in BAD_REQUESTS:
            with _connect(url) as bad:
                bad.sendall(request)
                answer = _read_all(bad)
            assert answer.startswith(b"HTTP/1.1 400 "), (request, answer[:300])
            headers, body = _error_answer(answer)
            assert "HTTP" in body["detail"], body
            ids.append(headers["x-request-id"])
        assert len(set(ids)) == len(BAD_REQUESTS)  # a fresh one each
        with httpx.Client() as client:  # the worker serves on
            assert client.get(f"{url}/healthz").status_code == 200
    # a log line with its request id and what the parser found (uvicorn's own "Invalid HTTP
    # request received." came first, a second warning with neither); one a minute: the
    # first's (a scanner's thousands were as many WARNING lines, each the client's to cause)
    log = (tmp_path / "serve.log").read_text()
    (line,) = [line for line in log.splitlines() if "WARNING" in line]
    assert re.search(rf"not HTTP/1\.1 \(request {ids[0]}\): \S", line), line


def test_a_clients_bad_requests_are_logged_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    """The next line after a quiet minute says how many went unlogged."""
    from absa.service import connections

    clock = [1000.0]
    throttled = connections._Throttled(clock=lambda: clock[0])
    with caplog.at_level("WARNING", logger="absa.service"):
        for _ in range(5):
            throttled.warning("invalid", "refused %s", "a")
        throttled.warning("too_large", "closed %s", "b")  # a kind of its own
        clock[0] += connections.LOG_EVERY_S
        throttled.warning("invalid", "refused %s", "c")
    assert [r.getMessage() for r in caplog.records] == [
        "refused a",
        "closed b",
        "refused c (and 4 more like it in the last 60 s, not logged)",
    ]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /v1/model?api_key=SECRET123 HTTP/1.1 x\r\n\r\n",
        b"GET / HTTP/1.1\r\nAuthorization Bearer SECRET123\r\n\r\n",
    ],
)
def test_what_the_parser_found_is_logged_without_the_requests_bytes(
    request_bytes: bytes,
) -> None:
    """h11 (uvicorn's parser where httptools is not installed) says the bytes it refused
    ("illegal request line: bytearray(b'GET /v1/model?api_key=SECRET123 ...')"), and the
    line of a refused request logged them: a key in the URL, a malformed Authorization
    header. The parser's words are logged, its copy of the request left out."""
    import h11

    from absa.service.connections import _parser_said

    conn = h11.Connection(h11.SERVER)
    conn.receive_data(request_bytes)
    with pytest.raises(h11.RemoteProtocolError):
        try:
            conn.next_event()
        except h11.RemoteProtocolError:
            said = _parser_said()
            raise
    assert "SECRET123" not in said and said.startswith("illegal "), said


def test_plain_uvicorn_keeps_its_line_of_a_refused_request(artifact: Path) -> None:
    """Every app put the filter that leaves out uvicorn's "Invalid HTTP request received."
    on uvicorn.error (absa serve's protocol logs one line of its own instead, with the
    request id): under plain uvicorn, whose protocol logs nothing else, a refused request
    left no line at all."""
    import logging

    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    uvicorn_error = logging.getLogger("uvicorn.error")
    with serve(make_settings(artifact)) as url:  # its logging config, then the handler
        uvicorn_error.addHandler(handler)
        try:
            with _connect(url) as sock:
                sock.sendall(BAD_REQUESTS[0])
                assert _read_all(sock).startswith(b"HTTP/1.1 400")
        finally:
            uvicorn_error.removeHandler(handler)
    assert "Invalid HTTP request received." in seen, seen


def test_a_body_that_stops_arriving_is_a_408(artifact: Path) -> None:
    with serve(make_settings(artifact, client_timeout_s=0.5)) as url:
        with _connect(url) as sock:
            head = (
                "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: 100\r\n\r\n"
            )
            sock.sendall(head.encode() + b'{"text": "the')
            start = time.monotonic()
            answer = _read_all(sock)
            waited = time.monotonic() - start
        status, _, rest = answer.partition(b"\r\n")
        assert status == b"HTTP/1.1 408 Request Timeout", answer
        body = json.loads(rest.split(b"\r\n\r\n", 1)[1])
        assert body["detail"] == "the request body did not arrive within 0.5 s"
        assert 0.4 < waited < 5
        # a request that sends its body in time is served as ever
        r = httpx.post(f"{url}/v1/predict", json={"text": "the food", "aspects": ["food"]})
        assert r.status_code == 200, r.text


def test_a_connection_that_never_finishes_its_headers_is_closed(
    artifact: Path, tmp_path: Path
) -> None:
    with absa_serve(artifact, tmp_path, ABSA_CLIENT_TIMEOUT_S="1") as url:
        with _connect(url) as silent, _connect(url) as slow, _connect(url) as kept:
            slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            # a request answered, then a second one begun and never finished (uvicorn's own
            # keep-alive timer stops at its first byte)
            kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _one_response(kept).startswith(b"HTTP/1.1 200")
            kept.sendall(b"GET /healthz HTTP/1.1\r\n")
            start = time.monotonic()
            assert _read_all(silent) == b""
            assert _read_all(slow) == b""
            assert _read_all(kept) == b""
            assert time.monotonic() - start < 5
        # meanwhile and after, requests are served as ever (a keep-alive connection too)
        with httpx.Client() as client:
            assert client.get(f"{url}/healthz").status_code == 200
            time.sleep(1.5)
            assert client.get(f"{url}/healthz").status_code == 200


@pytest.mark.parametrize("headers", [4000, 40_000], ids=["header-by-header", "2-MB-in-one-write"])
def test_a_request_head_past_its_limit_is_a_431_and_the_connection_closed(
    artifact: Path, tmp_path: Path, headers: int
) -> None:
    """httptools (what uvicorn runs here) has no limit on a request's headers: 100 MB of
    small ones, sent in 2 s with no key, took a worker to 1.24 GB and were answered 200.
    2 MB in one write: the 431 was written and the connection closed with the client's bytes
    still unread, the kernel sent a reset then, not the answer, and the client read
    "connection reset" in place of the 431 (CI, under load, header by header; in one write
    every time). Now the server shuts its side after the answer and reads and drops the rest
    for a while (a lingering close)."""
    lines = [f"X-{i:06d}: {'a' * 40}\r\n".encode() for i in range(headers)]  # 50 bytes each
    writes = lines if headers == 4000 else [b"".join(lines)]
    with absa_serve(artifact, tmp_path) as url:
        with _connect(url) as big:
            big.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            try:
                for chunk in writes:  # 200 KB or 2 MB, over 64 KiB
                    big.sendall(chunk)
                big.sendall(b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # closed once over the limit: what was sent after it is not read
            answer = _read_all(big)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        head, body = _error_answer(answer)
        assert "request headers" in body["detail"]
        with httpx.Client() as client:  # the worker serves on
            assert client.get(f"{url}/healthz").status_code == 200


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_body_past_its_limit_in_one_write_is_a_413_and_the_connection_serves_on(
    artifact: Path, tmp_path: Path, framing: str
) -> None:
    """4 MB in one write, past the 1 MB limit: the 413 is answered before the body is read
    (declared) or once past the limit (chunked), and the rest is read and dropped by the
    parser, not left unread on a closed connection (the 431's reset, which lost the answer):
    the next request on the connection, pipelined behind it, is answered."""
    body = b'{"text": "' + b"a" * 4_000_000 + b'", "aspects": ["a"]}'
    head = b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if framing == "chunked":
        head += b"Transfer-Encoding: chunked\r\n\r\n"
        body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    else:
        head += f"Content-Length: {len(body)}\r\n\r\n".encode()
    with absa_serve(artifact, tmp_path) as url:
        with _connect(url) as big:
            big.sendall(head + body + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            refused = _one_response(big)
            assert refused.startswith(b"HTTP/1.1 413 "), refused[:200]
            said = json.loads(refused.partition(b"\r\n\r\n")[2])
            assert said == {"detail": "request body over 1000000 bytes"}, said
            assert _one_response(big).startswith(b"HTTP/1.1 200 ")


def test_one_header_value_that_never_ends_is_a_431_too(artifact: Path, tmp_path: Path) -> None:
    """httptools calls back with a header only once it has ended, and keeps what it has of
    one in a buffer of its own till then: a value never ended took 149 MiB in 28 s on one
    connection, a worker to 400 MB and its /healthz to 7 s, the 64 KiB limit never asked.
    The bytes of a head under way are counted as they arrive. A body over that size in the
    same packets as its head (and a second request's, pipelined) is not head."""
    with absa_serve(artifact, tmp_path) as url:
        with _connect(url) as endless:
            endless.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
            start, sent = time.monotonic(), 0
            try:
                while sent < 32 * 2**20:  # answered long before (loopback buffers some MiB)
                    endless.sendall(b"a" * 65536)
                    sent += 65536
            except (BrokenPipeError, ConnectionResetError):
                pass
            answer = _read_all(endless)
            assert time.monotonic() - start < 10  # not the 30 s client timeout
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert sent < 16 * 2**20, f"{sent} bytes sent before the 431"
        body = json.dumps({"text": "the food was great " * 5000, "aspects": ["food"]})

        def post(last: str = "") -> bytes:
            return (
                f"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"{last}Content-Length: {len(body)}\r\n\r\n{body}"
            ).encode()

        assert len(post()) > 64 * 1024
        with _connect(url) as two:  # two such requests, pipelined in one write
            two.sendall(post() + post("Connection: close\r\n"))
            statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", _read_all(two))
        assert statuses == [b"413", b"413"]  # the text's length: past the head, read as body


@pytest.mark.parametrize(("path", "status"), [("/nothing", b"404"), ("/healthz", b"405")])
def test_a_body_no_route_takes_is_not_read_before_the_answer(
    artifact: Path, tmp_path: Path, path: str, status: bytes
) -> None:
    """Every request's body was read whole (up to ABSA_MAX_BODY_BYTES, 1 MB) before the
    router said 404 or 405, with no API key asked on such paths: 300 connections each
    sending 1 MB to /nothing took a worker from 312 to 599 MiB for the client timeout. Only
    the routes that take a body read it; the others answer at once."""
    with absa_serve(artifact, tmp_path, ABSA_CLIENT_TIMEOUT_S="20") as url:
        with _connect(url) as conn:
            conn.sendall(
                f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: 1000000\r\n\r\n".encode()
                + b" " * 100_000  # a tenth of it, the rest never sent
            )
            start = time.monotonic()
            answer = _one_response(conn)
            assert time.monotonic() - start < 5  # not the 20 s deadline's 408
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]


def test_an_idle_keep_alive_connection_is_kept_for_the_keep_alive_time(
    artifact: Path, tmp_path: Path
) -> None:
    """A proxy (nginx, an AWS ALB: 60 s) reuses an idle upstream connection until its own
    idle timeout: uvicorn's default keep-alive of 5 s (and the client timeout, armed again
    after each response) closed it first, and a request the proxy sent on it as it closed
    was a 502. An idle connection between requests is held ``ABSA_KEEP_ALIVE_S``; the client
    timeout is a started request's (its head must arrive within it)."""
    env = {"ABSA_CLIENT_TIMEOUT_S": "1", "ABSA_KEEP_ALIVE_S": "4"}
    with absa_serve(artifact, tmp_path, **env) as url, _connect(url) as kept:
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _one_response(kept).startswith(b"HTTP/1.1 200")
        time.sleep(2.5)  # idle past the client timeout
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _one_response(kept).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        assert _read_all(kept) == b""  # closed by the keep-alive timer
        assert 3 < time.monotonic() - start < 8
    from absa.settings import Settings

    assert Settings().keep_alive_s == 75  # over the 60 s idle timeout of nginx and an ALB


@pytest.mark.parametrize("workers", ["1", "2"])
def test_requests_the_parser_refuses_are_counted(
    artifact: Path, tmp_path: Path, workers: str
) -> None:
    """A request uvicorn's parser refused (400), a head over its limit (431) and a
    connection that sent no whole head in time were logged, never counted: no app route
    sees them, so absa_requests_total cannot. absa_protocol_errors_total{reason} counts
    them, added up across workers."""
    env = {"ABSA_CLIENT_TIMEOUT_S": "1", "ABSA_WORKERS": workers}
    with absa_serve(artifact, tmp_path, **env) as url:
        for request in BAD_REQUESTS:
            with _connect(url) as bad:
                bad.sendall(request)
                assert _read_all(bad).startswith(b"HTTP/1.1 400 ")
        with _connect(url) as big:
            headers = "".join(f"X-{i:06d}: {'a' * 40}\r\n" for i in range(1500))  # 75 KB
            try:
                big.sendall(f"GET /healthz HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                pass  # closed once over the limit
            assert _read_all(big).startswith(b"HTTP/1.1 431 ")
        with _connect(url) as silent:
            assert _read_all(silent) == b""
        text = httpx.get(f"{url}/metrics").text
    counted = {
        reason: float(value)
        for reason, value in re.findall(
            r'^absa_protocol_errors_total\{reason="([a-z_]+)"\} (\S+)$', text, re.M
        )
    }
    assert counted == {"invalid": len(BAD_REQUESTS), "too_large": 1, "timeout": 1}, text
