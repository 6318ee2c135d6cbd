"""srun's stdin and ``srun --pty`` against a live cluster, as Slurm 22.05 behaves (checked on the
real-Slurm twin): every task reads srun's stdin, ``--input`` narrows it, srun reads it eagerly, a
step that ignores it is unchanged, and ``srun --pty bash`` is a shell on a terminal of its own;
the agents' input route obeys the step credential alone."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import subprocess
import time

import pytest

from livekit import on_terminal, read_when

pytestmark = [pytest.mark.live, pytest.mark.timeout(60)]


def test_every_task_reads_sruns_stdin(live):
    r = live.run("srun", "-N2", "-n2", "cat", input="hi\n", timeout=20)
    assert (r.returncode, r.stdout, r.stderr) == (0, "hi\nhi\n", "")
    lines = "".join(f"{i}\n" for i in range(200_000))  # 1.3 MB: many chunks, in order, to each node
    r = live.run("srun", "-N2", "-n2", "sha256sum", input=lines, timeout=20)
    digest = hashlib.sha256(lines.encode()).hexdigest()
    assert (r.returncode, r.stdout) == (0, f"{digest}  -\n" * 2)
    r = live.run("srun", "-n3", "-l", "--input=1", "cat", input="a\nb\n", timeout=20)
    assert (r.returncode, r.stdout) == (0, "1: a\n1: b\n")
    r = live.run("srun", "-n2", "-i", "none", "cat", input="hi\n", timeout=20)
    assert (r.returncode, r.stdout) == (0, "")
    (live.work / "in.txt").write_text("from a file\n")
    r = live.run("srun", "-n2", "--input=in.txt", "cat", timeout=20)
    assert (r.returncode, r.stdout) == (0, "from a file\nfrom a file\n")
    r = live.run("srun", "--input=missing.txt", "cat", timeout=20)
    assert (r.returncode, r.stderr) == (1, "srun: error: Could not open stdin file: No such file or directory\n")


def test_srun_reads_its_stdin_eagerly_as_slurms_does(live):
    """The classic surprise: in a ``while read`` loop the first srun takes the rest of the list."""
    loop = 'printf "a\\nb\\nc\\n" | while read x; do {} echo $x; done'
    for srun, out in (("srun", "a\n"), ("srun --input=none", "a\nb\nc\n")):
        r = subprocess.run(["bash", "-c", loop.format(srun)], capture_output=True, text=True, env=live.c.env(),
                           cwd=live.work, timeout=30)
        assert (r.returncode, r.stdout) == (0, out), r.stderr


def test_a_step_that_ignores_stdin_is_unchanged(live):
    """A stdin that never closes keeps no step running; tasks that read a /dev/null stdin end."""
    read, write = os.pipe()  # stays open, never written
    try:
        start = time.monotonic()
        r = subprocess.run([str(live.c.dir / "bin" / "srun"), "-N2", "-n2", "bash", "-c", "echo $SLURMD_NODENAME"],
                           stdin=read, capture_output=True, text=True, env=live.c.env(), cwd=live.work, timeout=20)
        assert (r.returncode, sorted(r.stdout.split())) == (0, ["gpu01", "gpu02"]) and time.monotonic() - start < 10
    finally:
        os.close(read)
        os.close(write)
    r = subprocess.run([str(live.c.dir / "bin" / "srun"), "-n2", "cat"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=live.c.env(), cwd=live.work, timeout=20)
    assert (r.returncode, r.stdout) == (0, "")
    r = live.run("srun", "-N2", "-n2", "cat", input="", timeout=20)  # a pipe already at its end
    assert (r.returncode, r.stdout) == (0, "")


def test_srun_pty_bash_is_a_shell_on_its_own_terminal(live):
    code, screen, restored = on_terminal([str(live.c.dir / "bin" / "srun"), "--pty", "-n2", "bash", "--norc", "-i"],
                                   live.c.env(), live.work,
                                   b"tty; echo rank=$SLURM_PROCID; stty size; : </dev/tty && echo ctty; exit 3\r")
    lines = screen.replace("\r", "").splitlines()
    assert code == 3 and restored, screen
    assert re.search(r"/dev/pts/\d+\n", screen.replace("\r", "")), screen
    assert "rank=0" in lines and "33 101" in lines and "ctty" in lines, screen
    assert "rank=1" not in screen  # task 1's output went to /dev/null
    assert lines[-1] == "srun: error: gpu01: task 0: Exited with exit code 3", screen


def test_pty_wants_a_terminal_for_its_output(live):
    r = live.run("srun", "--pty", "bash", "-c", "echo $SLURM_PROCID; tty", input="", timeout=20)
    assert (r.returncode, r.stdout) == (1, "0\nnot a tty\n")
    assert r.stderr.startswith("srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device\n"
                               "srun: error: Not using a pseudo-terminal, disregarding --pty option\n"), r.stderr


def _post(addr: str, body: dict) -> tuple[int, dict]:
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", "/steps/input", body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read() or b"{}")


def test_the_input_route_obeys_the_step_credential_alone(live):
    live.reset()
    job = live.sbatch("-n2", "--wrap", "sleep 60")
    live.wait(job, "RUNNING")
    reader, other = (live.api.call("POST", f"/jobs/{job}/steps", {"ntasks": 1, "overlap": True}) for _ in range(2))
    addr = reader["addrs"]["gpu01"]
    out = live.work / f"stdin-{job}.txt"
    body = {"credential": reader["credential"], "job": reader["job"], "argv": ["bash", "-c", f"cat > {out}"],
            "environment": {"PATH": "/usr/bin:/bin"}, "cwd": str(live.work), "input": "all"}
    host, port = addr.rsplit(":", 1)
    launch = http.client.HTTPConnection(host, int(port), timeout=30)
    launch.request("POST", "/steps/launch", body=json.dumps(body).encode())
    resp = launch.getresponse()
    assert resp.status == 200 and "started" in json.loads(resp.readline())
    chunk = base64.b64encode(b"forged\n").decode()
    forged = reader["credential"][:-4] + ("AAAA" if not reader["credential"].endswith("AAAA") else "BBBB")
    assert _post(addr, {"credential": forged, "data": chunk})[0] == 401
    assert _post(addr, {"credential": "", "data": chunk})[0] == 401
    assert _post(addr, {"credential": other["credential"], "data": chunk, "eof": True})[0] == 403  # not running here
    assert _post(addr, {"credential": reader["credential"], "data": "not base64!"})[0] == 400
    status, reply = _post(addr, {"credential": reader["credential"], "data": base64.b64encode(b"mine\n").decode(),
                                 "eof": True})
    assert (status, reply) == (200, {"ok": True, "open": False})
    assert read_when(out, lambda text: text.endswith("\n")) == "mine\n"
    assert [(m["t"], m["exit"]) for m in map(json.loads, resp.read().splitlines()) if "exit" in m] == [(0, 0)]
    launch.close()
    live.run("scancel", str(job))
    live.wait(job)
