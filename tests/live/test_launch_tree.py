"""srun's fan-out: with TreeWidth 2 srun opens two connections for five nodes, agents pass the
launch on (to a sibling in their own process, or over the network to another process), and
srun's output, exit codes and per-task environment are what a launch node by node gave."""

from __future__ import annotations

import http.client
import json

import pytest

from livekit import until

pytestmark = pytest.mark.live
# gpu[01-02], gpu[03-04] and gpu05 in three processes; srun's spans: gpu[01-03] and gpu[04-05]
CLUSTER = {"nodes": 5, "nodes_per_agent": 2, "other": {"TreeWidth": "2"}}


def test_a_tree_launch_looks_like_a_launch_node_by_node(live):
    live.reset()
    r = live.run("srun", "-N5", "--ntasks-per-node=2", "-l", "bash", "-c",
                 "echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURM_STEP_NUM_TASKS; "
                 "echo err$SLURM_PROCID >&2")
    assert r.returncode == 0, r.stderr
    out = sorted(r.stdout.splitlines(), key=lambda line: int(line.split(":")[0]))
    assert out == [f"{t}: gpu0{t // 2 + 1} {t} {t % 2} {t // 2} 10" for t in range(10)]
    assert sorted(r.stderr.splitlines()) == sorted(f"{t}: err{t}" for t in range(10))
    r = live.run("srun", "-N5", "bash", "-c", "exit $((SLURM_NODEID == 2 ? 7 : SLURM_NODEID == 4 ? 9 : 0))")
    assert r.returncode == 9
    # one line per failed task, as each reports its end (either may be first, as in Slurm)
    assert sorted(r.stderr.splitlines()) == ["srun: error: gpu03: task 2: Exited with exit code 7",
                                             "srun: error: gpu05: task 4: Exited with exit code 9"]


def _launch(addr: str, body: dict) -> list[dict]:
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/steps/launch", body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    return [json.loads(line) for line in resp.read().decode().splitlines()]


def test_an_agent_passes_a_launch_on_only_to_the_nodes_and_addresses_the_credential_binds(live):
    live.reset()
    job = live.sbatch("-N2", "-w", "gpu[01,03]", "--wrap", "sleep 60")
    live.wait(job, "RUNNING")
    step = live.api.call("POST", f"/jobs/{job}/steps", {})
    body = {"credential": step["credential"], "job": step["job"], "argv": ["true"], "environment": {},
            "cwd": str(live.work), "tree_width": 1}
    # gpu02 (gpu01's sibling) and gpu05 are not the step's: gpu02 refuses, gpu05 is not reached
    lines = _launch(step["addrs"]["gpu01"], {**body, "tree": ["gpu01", "gpu02", "gpu03", "gpu05"]})
    ends = {m["node"]: next(k for k in ("done", "failed", "lost") if k in m) for m in lines
            if {"done", "failed", "lost"} & set(m)}
    assert ends == {"gpu01": "done", "gpu02": "failed", "gpu03": "done", "gpu05": "lost"}
    assert sorted(m["t"] for m in lines if "exit" in m) == [0, 1]
    # the credential was used on gpu01 and gpu03: a replay starts nothing
    again = _launch(step["addrs"]["gpu01"], {**body, "tree": ["gpu01", "gpu03"]})
    assert not [m for m in again if "started" in m] and {m["node"] for m in again if "failed" in m} == {"gpu01", "gpu03"}
    live.run("scancel", str(job))
    until(lambda: not live.job_processes(job), 10, "the job to end")
