"""A cluster across real (virtual) network: each agent in its own network namespace (root only).

Tasks see their own node's address and host name; a node cut off the network goes DOWN after SlurmdTimeout
and its job is requeued; once healed, the agent answers again and the run it still had is
killed by fencing (reference 5.1-5.2).
"""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest

from livekit import read_when, until

pytestmark = [pytest.mark.live,
              pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                 reason="network namespaces need root and iproute2")]
CLUSTER = {"netns": True, "slurmd_timeout": 3}

TALK = """
import os, socket, sys
rank = int(os.environ["SLURM_PROCID"])
if rank == 0:
    s = socket.create_server(("0.0.0.0", 29500))
    print("listening", flush=True)
    conn, peer = s.accept()
    print("rank 0 heard", conn.recv(100).decode(), "from", peer[0], flush=True)
else:
    for _ in range(100):
        try:
            c = socket.create_connection((os.environ["HEAD"], 29500), timeout=1)
            break
        except OSError:
            import time; time.sleep(0.1)
    c.sendall(b"hello")
"""


def _addr(live, node: str) -> str:
    return re.search(r"NodeAddr=(\S+)", live.run("scontrol", "show", "node", node).stdout).group(1)


def test_tasks_see_their_own_namespace_and_reach_each_other(live):
    a1, a2 = _addr(live, "gpu01"), _addr(live, "gpu02")
    assert a1 != a2 and not a1.startswith("127.")
    r = live.run("srun", "-N2", "-l", "hostname", "-I")
    assert (r.returncode, sorted(r.stdout.split("\n"))) == (0, ["", f"0: {a1} ", f"1: {a2} "])
    r = live.run("srun", "-N2", "-l", "hostname")  # each node has its own host name, too
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, ["0: gpu01", "1: gpu02"])
    r = live.run("srun", "-N2", "-l", "python3", "-c", TALK, env={"HEAD": a1})
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["0: listening", f"0: rank 0 heard hello from {a2}"]


def test_srun_inside_a_batch_job_on_a_namespaced_node(live):
    """The batch shell runs in the node's namespace, where the node's host name resolves to
    nothing: srun must still find its own address (before: a socket.gaierror traceback)."""
    job_id = live.sbatch("-N2", "-o", "ns-%j.out", "--wrap", "srun -l hostname")
    assert live.wait(job_id)["state"] == "COMPLETED"
    assert sorted((live.work / f"ns-{job_id}.out").read_text().splitlines()) == ["0: gpu01", "1: gpu02"]


TICKER = """#!/bin/bash
for i in $(seq 1 400); do
    echo "tick $SLURM_RESTART_COUNT $SLURMD_NODENAME"
    if [ "$SLURM_RESTART_COUNT" != 0 ] && [ $i = 3 ]; then exit 0; fi
    sleep 0.1
done
"""


def _runs(live, job_id: int) -> set[str]:
    """The SLURM_RESTART_COUNT of every live process of the job."""
    out = set()
    for pid, _ in live.job_processes(job_id):
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        out |= {v.split(b"=", 1)[1].decode() for v in env if v.startswith(b"SLURM_RESTART_COUNT=")}
    return out


def test_cut_node_goes_down_requeues_and_is_fenced_when_healed(live):
    net = live.c._net
    filler = live.sbatch("-w", "gpu01", "--gres=gpu:4", "--wrap", "sleep 300")
    live.wait(filler, "RUNNING")
    job_id = live.sbatch("--gres=gpu:4", "--open-mode=append", "-o", "tick-%j.out", script=TICKER)
    assert live.wait(job_id, "RUNNING")["nodes"] == "gpu02"
    out = live.work / f"tick-{job_id}.out"
    read_when(out, lambda t: "tick 0" in t)

    net.cut("gpu02")
    until(lambda: live.node("gpu02")["state"] == "down", 10, "the cut node to go DOWN")
    assert live.node("gpu02")["reason"] == "Not responding"
    job = live.wait(job_id, "PENDING", timeout=5)
    assert job["restart_count"] == 1
    # cut off, the old run goes on writing: nothing could tell it to stop
    before = out.read_text().count("tick 0")
    time.sleep(0.5)
    assert out.read_text().count("tick 0") > before and _runs(live, job_id) == {"0"}

    live.run("scancel", str(filler))
    job = live.wait(job_id, "COMPLETED", timeout=20)
    assert (job["nodes"], job["restart_count"]) == ("gpu01", 1)
    assert out.read_text().count("tick 1 gpu01\n") == 3
    assert _runs(live, job_id) == {"0"}  # still there, still cut off

    net.heal("gpu02")
    until(lambda: not live.job_processes(job_id), 10, "fencing to kill the old run")
    until(lambda: live.node("gpu02")["state"] == "idle" and not live.node("gpu02")["flags"], 10,
          "the healed node to return to service")
    settled = out.read_text()
    time.sleep(1)
    assert out.read_text() == settled  # nobody writes to it any more
    log = (live.c.dir / "log" / "slurmctld.log").read_text()
    assert f"node gpu02 runs job {job_id}.0 it does not own: killing it" in log
    r = live.run("sacct", "-D", "-X", "-j", str(job_id), "-o", "JobID,State,NodeList", "--parsable2", "-n")
    assert r.stdout == f"{job_id}|NODE_FAIL|gpu02\n{job_id}|COMPLETED|gpu01\n"
