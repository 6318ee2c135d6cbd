"""Node failures on a live cluster: a crashed agent, an operator's DOWN, DRAIN and RESUME
(reference 5.1-5.3).  SlurmdTimeout is 3 s here, so a silent node is DOWN within seconds."""

from __future__ import annotations

import getpass
import re
import time

import pytest

from livekit import read_when, until

pytestmark = pytest.mark.live
CLUSTER = {"slurmd_timeout": 3}
RERUN = """#!/bin/bash
echo "run $SLURM_RESTART_COUNT on $SLURMD_NODENAME"
if [ "$SLURM_RESTART_COUNT" = 0 ]; then sleep 300; fi
"""


def _fill_gpu01(live) -> int:
    """A job holding every GPU of gpu01, so the next GPU job lands on gpu02."""
    filler = live.sbatch("-w", "gpu01", "--gres=gpu:4", "--wrap", "sleep 300")
    live.wait(filler, "RUNNING")
    return filler


def test_crashed_agent_node_down_requeue_and_node_fail(live):
    live.reset()
    filler = _fill_gpu01(live)
    again = live.sbatch("--gres=gpu:4", "--open-mode=append", "-o", "rerun-%j.out", script=RERUN)
    lost = live.sbatch("--no-requeue", "-w", "gpu02", "--wrap", "sleep 300")
    assert live.wait(again, "RUNNING")["nodes"] == "gpu02" and live.wait(lost, "RUNNING")["nodes"] == "gpu02"
    read_when(live.work / f"rerun-{again}.out", lambda t: "run 0" in t)

    killed_at = time.time()
    live.c.kill_node("gpu02")
    until(lambda: "NOT_RESPONDING" in live.node("gpu02")["flags"], 5, "the missed ping")
    node = live.node("gpu02")
    assert node["state"] != "down"  # not responding is not yet DOWN
    until(lambda: live.node("gpu02")["state"] == "down", 10, "SlurmdTimeout")
    assert time.time() - killed_at >= 3 - 1  # SlurmdTimeout after its last answer, a ping (1 s) before the kill
    node = live.node("gpu02")
    assert (node["reason"], node["flags"]) == ("Not responding", ["NOT_RESPONDING"])
    assert live.run("sinfo", "-h", "-N", "-n", "gpu02", "-o", "%N %t").stdout == "gpu02 down*\n"
    shown = live.run("scontrol", "show", "node", "gpu02").stdout
    assert "   State=DOWN+NOT_RESPONDING " in shown
    assert re.search(r"^   Reason=Not responding \[root@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\]$", shown, re.M), shown
    assert re.fullmatch(r"Not responding       root      \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d gpu02\n",
                        live.run("sinfo", "-R", "-h").stdout)

    # the requeueable batch job comes back with the same id, the other one ends NODE_FAIL
    job = live.wait(again, "PENDING", timeout=5)
    assert (job["restart_count"], job["reason"]) == (1, "BeginTime")
    job = live.wait(lost, "NODE_FAIL", timeout=5)
    assert (job["reason"], job["exit_code"]) == ("NodeDown", "1:0")
    live.run("scancel", str(filler))
    job = live.wait(again, "COMPLETED", timeout=20)
    assert (job["nodes"], job["restart_count"]) == ("gpu01", 1)
    assert (live.work / f"rerun-{again}.out").read_text() == "run 0 on gpu02\nrun 1 on gpu01\n"

    r = live.run("sacct", "-j", str(again), "-D", "-X", "-o", "JobID,State,ExitCode,NodeList", "--parsable2", "-n")
    assert r.stdout == f"{again}|NODE_FAIL|1:0|gpu02\n{again}|COMPLETED|0:0|gpu01\n"
    r = live.run("sacct", "-j", str(again), "-X", "-o", "JobID,State", "--parsable2", "-n")
    assert r.stdout == f"{again}|COMPLETED\n"
    r = live.run("sacct", "-j", str(lost), "-X", "-o", "JobID,State,ExitCode", "--parsable2", "-n")
    assert r.stdout == f"{lost}|NODE_FAIL|1:0\n"
    r = live.run("squeue", "-t", "all", "-h", "-j", str(lost), "-o", "%i %t %r")
    assert r.stdout == f"{lost} NF NodeDown\n"

    # the node boots again: ReturnToService=1 puts a node DOWN for not responding back
    live.c.start_node("gpu02")
    until(lambda: live.node("gpu02")["state"] == "idle" and not live.node("gpu02")["flags"], 10,
          "gpu02 to return to service")


def test_scontrol_down_requeues_and_resume_brings_it_back(live):
    live.reset()
    _fill = _fill_gpu01(live)
    again = live.sbatch("--gres=gpu:4", "-o", "down-%j.out", script=RERUN)
    assert live.wait(again, "RUNNING")["nodes"] == "gpu02"
    read_when(live.work / f"down-{again}.out", lambda t: "run 0" in t)
    r = live.run("scontrol", "update", "NodeName=gpu02", "State=DOWN", "Reason=bad gpu")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    node = live.node("gpu02")
    assert (node["state"], node["reason"], node["flags"]) == ("down", "bad gpu", [])
    job = live.wait(again, "PENDING", timeout=5)
    assert job["restart_count"] == 1
    until(lambda: not live.job_processes(again), 10, "the first run to be killed")
    assert live.run("sinfo", "-h", "-N", "-n", "gpu02", "-o", "%N %t %E").stdout == "gpu02 down bad gpu\n"
    time.sleep(3.5)  # past the requeue delay: gpu02 is DOWN and gpu01 full, so it must wait
    assert live.job(again)["state"] == "PENDING"
    r = live.run("scontrol", "update", "NodeName=gpu02", "State=RESUME")
    assert (r.returncode, r.stderr) == (0, "")
    job = live.wait(again, "COMPLETED", timeout=15)
    assert job["nodes"] == "gpu02"
    assert live.node("gpu02")["reason"] is None
    live.run("scancel", str(_fill))


def test_drain_needs_a_reason_and_lets_running_jobs_finish(live):
    live.reset()
    r = live.run("scontrol", "update", "NodeName=gpu02", "State=DRAIN")
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", "You must specify a reason when DOWNING or DRAINING a node. Request denied\n")
    assert live.node("gpu02")["state"] == "idle"
    running = live.sbatch("-w", "gpu02", "--wrap", "sleep 4")
    live.wait(running, "RUNNING")
    r = live.run("scontrol", "update", "NodeName=gpu02", "State=DRAIN", "Reason=maintenance")
    assert (r.returncode, r.stderr) == (0, "")
    assert live.run("sinfo", "-h", "-N", "-n", "gpu02", "-o", "%t").stdout == "drng\n"
    blocked = live.sbatch("-w", "gpu02", "--wrap", "true")
    assert live.wait(running, timeout=10)["state"] == "COMPLETED"
    until(lambda: live.node("gpu02")["state"] == "drain", 5, "the node to be drained")
    assert live.run("sinfo", "-h", "-N", "-n", "gpu02", "-o", "%t").stdout == "drain\n"
    time.sleep(1.5)
    assert live.job(blocked)["state"] == "PENDING"
    assert live.run("scontrol", "update", "NodeName=gpu02", "State=RESUME").returncode == 0
    assert live.wait(blocked, timeout=10)["state"] == "COMPLETED"


def test_node_update_by_a_user_is_refused(live):
    token = live.run("scontrol", "token", "username=alice").stdout.strip().split("=", 1)[1]
    r = live.run("scontrol", "update", "NodeName=gpu02", "State=DOWN", "Reason=x", env={"SLURM_JWT": token})
    assert (r.returncode, r.stderr) == (1, "slurm_update error: Invalid user id\n")
    assert live.node("gpu02")["state"] == "idle"


def test_a_reserved_run_that_loses_its_node_starts_again_on_a_spare(live):
    """Issue 25 item 2, as Slurm 22.05 does it (twin session reservation_spares): a reservation
    by count swaps its crashed node for a free one of the partition, and the run requeued off the
    lost node starts again inside the reservation; named nodes and REPLACE_DOWN are refused."""
    live.reset()
    me = getpass.getuser()
    r = live.run("scontrol", "create", "reservation", "ReservationName=frontier", "NodeCnt=1", "StartTime=now",
                 "Duration=60", f"Users={me}", "Flags=REPLACE_DOWN")
    assert r.returncode == 0, r.stderr
    shown = live.run("scontrol", "show", "reservation", "frontier").stdout
    assert "Nodes=gpu01 NodeCnt=1" in shown and "Flags=REPLACE_DOWN" in shown
    job = live.sbatch("--reservation=frontier", "-o", "spare-%j.out", script=RERUN)
    assert live.wait(job, "RUNNING")["nodes"] == "gpu01"
    read_when(live.work / f"spare-{job}.out", lambda t: "run 0" in t)
    live.c.kill_node("gpu01")
    done = live.wait(job, "COMPLETED", timeout=30)
    assert (done["nodes"], done["restart_count"]) == ("gpu02", 1)
    assert "Nodes=gpu02 NodeCnt=1" in live.run("scontrol", "show", "reservation", "frontier").stdout
    assert "run 1 on gpu02" in (live.work / f"spare-{job}.out").read_text()
    assert live.run("scontrol", "delete", "ReservationName=frontier").returncode == 0
    r = live.run("scontrol", "create", "reservation", "ReservationName=named", "Nodes=gpu02", "StartTime=now",
                 "Duration=60", f"Users={me}", "Flags=REPLACE_DOWN")
    assert (r.returncode, r.stderr) == (1, "Error creating the reservation: Invalid node name specified\n")
