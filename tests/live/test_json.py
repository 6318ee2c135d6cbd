"""``--json``/``--yaml`` of squeue, sinfo, sacct, scontrol show and sshare on a live cluster, in
Slurm 22.05's openapi/v0.0.38 shape (issue 22, item 2; minislurm/cli/fmt/json_out.py): what
torchx (``sacct --json``: jobs[].job_id, name, state.current) and submitit-like tools (``squeue
--json``: jobs[].job_id, job_state) read."""

from __future__ import annotations

import json

import pytest
import yaml

from livekit import until

pytestmark = pytest.mark.live
RELEASE = "22.05.8"


def doc(live, *argv) -> dict:
    r = live.run(*argv)
    assert r.returncode == 0, (argv, r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["meta"]["Slurm"]["release"] == RELEASE and out["errors"] == [], out["meta"]
    assert out["meta"]["Slurm"]["version"] == {"major": 22, "micro": 8, "minor": 5}
    return out


@pytest.fixture(scope="module")
def scene(live):
    """A completed 2-GPU job with a step, a 3-task array (done), and a pending job that asks for
    more GPUs than a node has beside a running one."""
    done = live.sbatch("-J", "done-job", "--gres=gpu:2", "-t", "10", "--wrap", "srun true")
    array = live.sbatch("-J", "arr", "-a", "1-3", "--wrap", "true")
    live.wait(done)
    until(lambda: all(j["state"] == "COMPLETED" for j in live.api.call("GET", "/jobs")["jobs"]
                      if j.get("array_job_id") == array) and len([j for j in live.api.call("GET", "/jobs")["jobs"]
                                                                  if j.get("array_job_id") == array]) == 3,
          30, "the array's three tasks to complete")
    running = live.sbatch("-J", "hog", "-N2", "--gres=gpu:4", "--wrap", "sleep 300")
    live.wait(running, "RUNNING")
    pending = live.sbatch("-J", "waiter", "--gres=gpu:1", "--wrap", "true")
    until(lambda: live.job(pending)["reason"] not in ("None", ""), 30, "the pending job's reason")
    yield {"done": done, "array": array, "running": running, "pending": pending}
    for job_id in (running, pending):
        live.run("scancel", str(job_id))


def test_squeue_json(live, scene):
    jobs = {j["job_id"]: j for j in doc(live, "squeue", "--json")["jobs"]}
    # 22.05's --json lists every job the controller holds, finished ones too, whatever the filters
    assert {scene["done"], scene["running"], scene["pending"]} <= set(jobs)
    assert set(jobs) == {j["job_id"] for j in doc(live, "squeue", "--json", "-t", "PD")["jobs"]}
    done, hog, waiter = jobs[scene["done"]], jobs[scene["running"]], jobs[scene["pending"]]
    assert (done["job_state"], done["name"], done["node_count"], done["time_limit"]) == ("COMPLETED", "done-job", 1, 10)
    assert "gres/gpu=2" in done["tres_alloc_str"] and done["exit_code"] == 0
    assert hog["job_state"] == "RUNNING" and hog["nodes"] == "gpu[01-02]" and hog["node_count"] == 2
    assert hog["gres_detail"] == ["gpu:4(IDX:0-3)", "gpu:4(IDX:0-3)"] and "gres/gpu=8" in hog["tres_alloc_str"]
    assert hog["start_time"] > 0 and hog["submit_time"] > 0 and hog["tres_per_node"] == "gres:gpu:4"
    assert waiter["job_state"] == "PENDING" and waiter["state_reason"] == "Resources" and waiter["nodes"] is None
    assert waiter["tres_alloc_str"] is None and "gres/gpu=1" in waiter["tres_req_str"]
    tasks = sorted((j["array_task_id"], j["job_state"]) for j in jobs.values() if j["array_job_id"] == scene["array"])
    assert tasks == [(1, "COMPLETED"), (2, "COMPLETED"), (3, "COMPLETED")]
    assert done["array_task_id"] is None and done["array_job_id"] == 0
    assert done["user_name"] and done["user_id"] >= 0 and done["partition"] == "gpu"


def test_yaml_is_the_same_document(live, scene):
    r = live.run("squeue", "--yaml")
    assert r.returncode == 0, r.stderr
    got = yaml.safe_load(r.stdout)
    assert got["meta"]["Slurm"]["release"] == RELEASE
    assert scene["pending"] in {j["job_id"] for j in got["jobs"]}


def test_sinfo_json(live, scene):
    nodes = {n["name"]: n for n in doc(live, "sinfo", "--json")["nodes"]}
    assert set(nodes) == {"gpu01", "gpu02"}
    for n in nodes.values():
        assert n["state"] in ("allocated", "mixed") and n["state_flags"] == []
        assert n["gres"] == "gpu:4" and n["gres_used"] == "gpu:4(IDX:0-3)" and n["partitions"] == ["gpu"]
        assert n["cpus"] == 8 and n["real_memory"] == 64000 and "gres/gpu=4" in n["tres"]


def test_sacct_json_lists_every_job_asked_for(live, scene):
    ids = [scene["done"], scene["array"], scene["pending"]]
    # each -j counts, and so does a comma list; torchx reads job_id, name and state.current
    for argv in (["-j", str(ids[0]), "-j", str(ids[1]), "-j", str(ids[2])], ["-j", ",".join(map(str, ids))]):
        jobs = doc(live, "sacct", "--json", *argv)["jobs"]
        by_id = {}
        for j in jobs:
            by_id.setdefault(j["job_id"], j)
        done = by_id[scene["done"]]
        assert (done["name"], done["state"]["current"]) == ("done-job", "COMPLETED")
        assert done["exit_code"] == {"status": "SUCCESS", "return_code": 0}
        assert done["time"]["limit"] == 10 and done["time"]["end"] >= done["time"]["start"] > 0
        assert {"type": "gres", "name": "gpu", "id": 1001, "count": 2} in done["tres"]["allocated"]
        assert [s["step"]["id"] for s in done["steps"]] == ["batch", 0]
        assert by_id[scene["pending"]]["state"]["current"] == "PENDING"
        tasks = sorted(j["array"]["task_id"] for j in jobs if j["array"]["job_id"] == scene["array"])
        assert tasks == [1, 2, 3] and all(isinstance(j["state"]["current"], str) for j in jobs)
    assert [j["steps"] for j in doc(live, "sacct", "--json", "-X", "-j", str(ids[0]))["jobs"]] == [[]]


def test_scontrol_json_show(live, scene):
    for argv in (["--json", "show", "job", str(scene["running"])], ["show", "job", str(scene["running"]), "--json"]):
        (job,) = doc(live, "scontrol", *argv)["jobs"]
        assert job["job_id"] == scene["running"] and job["job_state"] == "RUNNING" and job["name"] == "hog"
    (node,) = doc(live, "scontrol", "--json", "show", "node", "gpu02")["nodes"]
    assert node["name"] == "gpu02" and node["gres"] == "gpu:4"
    (part,) = doc(live, "scontrol", "show", "partition", "--json")["partitions"]
    assert part["name"] == "gpu" and part["nodes"] == "gpu[01-02]" and part["total_nodes"] == 2


def test_sshare_json(live, scene):
    shares = doc(live, "sshare", "--json")["shares"]
    accounts = {s["name"] for s in shares if s["type"] == ["ASSOCIATION"]}
    users = [s for s in shares if s["type"] == ["USER"]]
    assert accounts and users and all(u["parent"] in accounts for u in users)
    assert all({"name", "parent", "shares", "usage", "fairshare"} <= set(s) for s in shares)
