"""Virtual nodes: one agent process hosts several nodes, which the controller sees as any others;
one of them crashes, is cut off, drains or comes back while its siblings run on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from livekit import processes, read_when, until

pytestmark = pytest.mark.live
CLUSTER = {"nodes": 6, "nodes_per_agent": 3, "slurmd_timeout": 3}
RERUN = """#!/bin/bash
echo "run $SLURM_RESTART_COUNT on $SLURMD_NODENAME"
if [ "$SLURM_RESTART_COUNT" = 0 ]; then sleep 300; fi
"""


def _agents(live) -> list[str]:
    return [cmd for _, cmd in processes(live.c.conf_path) if "minislurm.slurmd" in cmd]


def test_six_nodes_in_two_processes_each_a_node_of_its_own(live):
    live.reset()
    assert len(_agents(live)) == 2
    nodes = live.api.call("GET", "/nodes")["nodes"]
    assert [n["name"] for n in nodes] == [f"gpu0{i}" for i in range(1, 7)]
    assert len({live.agent_address(n["name"]) for n in nodes}) == 6  # a port each, as separate agents have
    r = live.run("srun", "-N6", "--ntasks-per-node=2", "--gpus-per-task=1", "-l", "bash", "-c",
                 "echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_LOCALID $CUDA_VISIBLE_DEVICES")
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.splitlines(), key=lambda line: int(line.split(":")[0]))
    assert lines == [f"{t}: gpu0{t // 2 + 1} {t} {t % 2} {t % 2}" for t in range(12)]
    r = live.run("srun", "-N6", "bash", "-c", 'exit $((SLURM_NODEID == 4 ? 3 : 0))')
    assert (r.returncode, r.stderr) == (3, "srun: error: gpu05: task 4: Exited with exit code 3\n")


def test_one_virtual_node_crashes_its_job_requeues_its_siblings_run_on(live):
    live.reset()
    neighbour = live.sbatch("-w", "gpu02", "--wrap", "sleep 300")
    again = live.sbatch("-w", "gpu03", "-o", "rerun-%j.out", script=RERUN)
    live.wait(neighbour, "RUNNING")
    live.wait(again, "RUNNING")
    read_when(live.work / f"rerun-{again}.out", lambda t: "run 0" in t)
    live.c.crash_node("gpu03")
    until(lambda: not live.job_processes(again), 5, "the crashed node's job to die with it")
    until(lambda: live.node("gpu03")["state"] == "down", 10, "SlurmdTimeout")
    assert live.job(again)["restart_count"] == 1
    assert live.job(neighbour)["state"] == "RUNNING" and live.job_processes(neighbour)
    assert live.node("gpu02")["state"] == "mix" and live.node("gpu01")["state"] == "idle"
    live.c.restore_node("gpu03")  # boots again: ReturnToService=1 brings it back
    job = live.wait(again, "COMPLETED", timeout=20)
    assert (job["nodes"], job["restart_count"]) == ("gpu03", 1)
    assert (live.work / f"rerun-{again}.out").read_text() == "run 1 on gpu03\n"
    live.run("scancel", str(neighbour))


def test_a_cut_off_node_is_fenced_when_it_comes_back(live):
    live.reset()
    job = live.sbatch("-w", "gpu05", "--wrap", "sleep 300")
    live.wait(job, "RUNNING")
    live.c.fail_node("gpu05", "cut")
    until(lambda: live.node("gpu05")["state"] == "down", 10, "SlurmdTimeout")
    assert live.job_processes(job)  # cut off, not dead: its job runs on, unheard
    live.run("scancel", str(job))
    live.c.restore_node("gpu05")
    until(lambda: not live.job_processes(job), 10, "the controller to fence the cancelled job")
    until(lambda: live.node("gpu05")["state"] == "idle", 10, "gpu05 to return to service")


def test_drain_one_virtual_node(live):
    live.reset()
    r = live.run("scontrol", "update", "NodeName=gpu04", "State=DRAIN", "Reason=fan")
    assert (r.returncode, r.stderr) == (0, "")
    assert live.run("sinfo", "-h", "-N", "-n", "gpu04", "-o", "%N %t %E").stdout == "gpu04 drain fan\n"
    job = live.sbatch("-N6", "--wrap", "true")
    assert live.wait(job, "PENDING")["state"] == "PENDING"
    live.run("scontrol", "update", "NodeName=gpu04", "State=RESUME")
    assert live.wait(job, "COMPLETED", timeout=15)["num_nodes"] == 6


@pytest.mark.parametrize("flags, message", [
    (["--nodes", "4", "--nodes-per-agent", "0"], "--nodes-per-agent must be between 1 and the node count (4), not 0"),
    (["--nodes", "4", "--nodes-per-agent", "5"], "--nodes-per-agent must be between 1 and the node count (4), not 5"),
    (["--nodes", "300000", "--nodes-per-agent", "300000"], "needs about"),
    (["--nodes", "100000000"], "a cluster of 100000000 nodes in 8 agent processes needs about"),
    (["--nodes=0"], "--nodes must be at least 1, not 0"),
    (["--nodes=-3"], "--nodes must be at least 1, not -3"),
])
def test_bad_cluster_shapes_start_nothing(tmp_path, flags, message):
    folder = tmp_path / "c"
    r = subprocess.run([sys.executable, "-m", "minislurm.cli.main", "cluster", "up", "--dir", str(folder), *flags],
                       capture_output=True, text=True, timeout=120, env={**os.environ})
    assert r.returncode == 1 and message in r.stderr and r.stderr.startswith("minislurm cluster: error: "), r.stderr
    assert not (folder / "pids").exists() and not (folder / "slurm.conf").exists()
