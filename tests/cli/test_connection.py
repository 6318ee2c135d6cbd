"""client.Connection, the little HTTP/1.1 the commands speak instead of importing http.client:
a reply read whole or line by line, chunked (as the agents stream a step's output), with a
Content-Length, or up to the close."""

from __future__ import annotations

import socket
import threading

import pytest

from minislurm.client import Connection


def serve_once(reply: bytes) -> tuple[str, int]:
    """A server that reads one request, writes ``reply`` in pieces of 7 bytes and closes."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer():
        conn, _ = server.accept()
        with conn, server:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            for i in range(0, len(reply), 7):  # lines and chunks cut anywhere
                conn.sendall(reply[i:i + 7])
    threading.Thread(target=answer, daemon=True).start()
    return server.getsockname()


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


STREAM = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(b'{"a": 1}\n{"b"', b': 2}\n', b'{"c": 3}\n')


@pytest.mark.parametrize("reply, lines", [
    (STREAM, [b'{"a": 1}\n', b'{"b": 2}\n', b'{"c": 3}\n']),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\none\ntwo\nX", [b"one\n", b"two\n", b"X"]),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nup to\nthe close\n", [b"up to\n", b"the close\n"]),
])
def test_a_reply_is_read_line_by_line(reply, lines):
    conn = Connection(serve_once(reply), timeout=5)
    conn.send("POST", "/steps/launch", b"{}")
    status, headers = conn.reply()
    assert status == 200 and list(conn.lines(headers)) == lines


def test_a_reply_is_read_whole_and_a_cut_one_is_an_error():
    conn = Connection(serve_once(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(b'{"error"', b': "no"}')),
                      timeout=5)
    conn.send("POST", "/x", b"{}")
    status, headers = conn.reply()
    assert (status, conn.body(headers)) == (404, b'{"error": "no"}')
    cut = Connection(serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort"), timeout=5)
    cut.send("POST", "/x", b"{}")
    with pytest.raises(ConnectionError):
        cut.body(cut.reply()[1])
