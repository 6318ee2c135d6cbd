"""The commands' client tries to connect for MessageTimeout seconds, as Slurm's commands do, so
that a command typed while the controller restarts waits for it instead of failing."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from minislurm.client import Client, ClientError


class Ping(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"pong": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def late_controller(tmp_path):
    """A slurm.conf whose controller starts listening 2 s from now."""
    port = free_port()
    servers: list[ThreadingHTTPServer] = []

    def listen():
        servers.append(ThreadingHTTPServer(("127.0.0.1", port), Ping))
        threading.Thread(target=servers[0].serve_forever, daemon=True).start()
    later = threading.Timer(2.0, listen)

    def start(message_timeout: str | None) -> Client:
        conf = tmp_path / "slurm.conf"
        conf.write_text(f"SlurmctldHost=ctl(127.0.0.1)\nSlurmctldPort={port}\n"
                        + (f"MessageTimeout={message_timeout}\n" if message_timeout else ""))
        later.start()
        return Client(conf, token="t")
    yield start
    later.cancel()
    later.join()
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_command_waits_for_a_controller_that_comes_back_within_message_timeout(late_controller):
    client = late_controller(None)  # MessageTimeout's default, 10 s
    assert client.call("GET", "/ping") == {"pong": "/api/v1/ping"}


def test_a_controller_away_longer_than_message_timeout_is_a_connect_failure(late_controller):
    client = late_controller("1")
    with pytest.raises(ClientError, match=r"^Unable to contact slurm controller \(connect failure\)$"):
        client.call("GET", "/ping")
