"""A command that stops the job it runs in (``scontrol requeue $SLURM_JOB_ID``, ``scancel
$SLURM_JOB_ID``) reports its answer, exit 0, even when the SIGTERM that its request brings to
the job's processes reaches it before it could exit (issue 21, item 5).  Here a fake
controller sends that SIGTERM to the command before it answers: the worst order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class SignalsThenAnswers(BaseHTTPRequestHandler):
    """Any POST: SIGTERM to the command (``server.target``), then ``{"ok": true}``."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        os.kill(self.server.target.pid, signal.SIGTERM)
        body = json.dumps({"ok": True}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def controller(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), SignalsThenAnswers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"SlurmctldHost=ctl(127.0.0.1)\nSlurmctldPort={server.server_address[1]}\n")
    yield server, conf
    server.shutdown()
    server.server_close()


def command(controller, argv: list[str], in_job: bool) -> subprocess.CompletedProcess:
    server, conf = controller
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update({"SLURM_CONF": str(conf), "SLURM_JWT": "t"}, **({"SLURM_JOB_ID": "7"} if in_job else {}))
    proc = server.target = subprocess.Popen([sys.executable, "-m", "minislurm.cli.main", *argv], env=env,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@pytest.mark.parametrize("argv", [["scontrol", "requeue", "7"], ["scancel", "7"]])
def test_a_command_that_stops_its_own_job_exits_with_its_answer(controller, argv):
    r = command(controller, argv, in_job=True)
    assert (r.returncode, r.stderr) == (0, "")


def test_outside_a_job_sigterm_still_stops_a_command(controller):
    assert command(controller, ["scontrol", "requeue", "7"], in_job=False).returncode == -signal.SIGTERM
