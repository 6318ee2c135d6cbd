"""``--json``/``--yaml`` documents (minislurm/cli/fmt/json_out.py): Slurm 22.05's openapi/v0.0.38
and dbv0.0.38 shapes, built from the views the text formats read (issue 22, item 2)."""

from __future__ import annotations

import importlib
import json

import pytest
import yaml

from minislurm.cli.fmt import json_out

NOW = 1_709_294_400.0


def job(**kw):
    j = {"job_id": 1042, "array_job_id": None, "array_task_id": None, "display_id": "1042",
         "name": "llama-pretrain", "user": "alice", "uid": 1000, "gid": 1000, "account": "research",
         "partition": "gpu", "state": "RUNNING", "reason": "None", "priority": 4294901757, "nice": 0,
         "submit_time": NOW - 4000, "eligible_time": NOW - 4000, "start_time": NOW - 3723, "end_time": None,
         "time_limit": 86400.0, "num_nodes": 2, "num_cpus": 16, "num_tasks": 2, "cpus_per_task": 8,
         "mem_per_node": 1000, "gres": "gpu:4", "nodes": "gpu[01-02]", "exit_code": "0:0",
         "gpus": {"gpu01": [0, 1, 2, 3], "gpu02": [0, 1, 2, 3]}, "restart_count": 0, "requeue": True,
         "exclusive": False, "hold": None, "dependency": None, "reservation": None, "req_nodes": "",
         "exc_nodes": "", "batch_host": "gpu01", "work_dir": "/home/alice", "command": "/home/alice/train.sh",
         "alloc_detail": [["gpu01", 0, 8, 1000, [0, 1, 2, 3]], ["gpu02", 0, 8, 1000, [0, 1, 2, 3]]]}
    j.update(kw)
    return j


def test_meta_is_22_05s():
    doc = json_out.jobs_document([])
    assert doc == {"meta": {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
                            "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}},
                   "errors": [], "jobs": []}
    assert json_out.sacct_document([])["meta"]["plugin"] == {"type": "openapi/dbv0.0.38",
                                                             "name": "Slurm OpenAPI DB v0.0.38"}


def test_running_job_record():
    (rec,) = json.loads(json_out.dump(json_out.jobs_document([job()], cluster="lab")))["jobs"]
    assert rec["job_id"] == 1042 and rec["job_state"] == "RUNNING" and rec["state_reason"] == "None"
    assert rec["name"] == "llama-pretrain" and rec["user_name"] == "alice" and rec["account"] == "research"
    assert rec["nodes"] == "gpu[01-02]" and rec["node_count"] == 2 and rec["cpus"] == 16
    assert rec["time_limit"] == 1440 and rec["submit_time"] == int(NOW - 4000)
    assert rec["start_time"] == int(NOW - 3723) and rec["end_time"] == int(NOW - 3723 + 86400)
    assert rec["array_job_id"] == 0 and rec["array_task_id"] is None and rec["cluster"] == "lab"
    assert rec["tres_req_str"] == rec["tres_alloc_str"] == "cpu=16,mem=2000M,node=2,billing=16,gres/gpu=8"
    assert rec["tres_per_node"] == "gres:gpu:4"
    assert rec["gres_detail"] == ["gpu:4(IDX:0-3)", "gpu:4(IDX:0-3)"]
    assert rec["job_resources"]["allocated_hosts"] == 2
    assert [n["nodename"] for n in rec["job_resources"]["allocated_nodes"]] == ["gpu01", "gpu02"]
    assert rec["standard_output"] == "/home/alice/slurm-1042.out"


def test_pending_and_finished_jobs():
    pending = job(job_id=7, state="PENDING", reason="Resources", start_time=None, nodes="", gpus={},
                  alloc_detail=[], batch_host=None, time_limit=None, expected_start=None)
    failed = job(job_id=8, state="FAILED", exit_code="1:0", end_time=NOW)
    killed = job(job_id=9, state="CANCELLED", exit_code="0:9", end_time=NOW)
    task = job(job_id=12, array_job_id=10, array_task_id=2, display_id="10_2")
    recs = {r["job_id"]: r for r in json_out.jobs_document([killed, failed, pending, task])["jobs"]}
    assert list(recs) == [7, 8, 9, 12]
    p = recs[7]
    assert p["job_state"] == "PENDING" and p["state_reason"] == "Resources" and p["nodes"] is None
    assert p["tres_alloc_str"] is None and p["gres_detail"] == [] and p["time_limit"] is None
    assert "job_resources" not in p and p["start_time"] == 0
    assert recs[8]["exit_code"] == 256 and recs[9]["exit_code"] == 9  # wait statuses
    assert recs[12]["array_job_id"] == 10 and recs[12]["array_task_id"] == 2


def test_nodes():
    idle = {"name": "gpu01", "state": "idle", "flags": [], "reason": None, "cpus": 8, "alloc_cpus": 0,
            "real_memory": 64000, "alloc_mem": 0, "gpus": 4, "alloc_gpus": [], "gres": "gpu:4",
            "partitions": ["gpu"]}
    drng = dict(idle, name="gpu02", state="drng", alloc_cpus=4, alloc_mem=2000, alloc_gpus=[0, 1],
                reason="maintenance", flags=["DRAIN"])
    a, b = json_out.nodes_document([idle, drng])["nodes"]
    assert (a["name"], a["state"], a["state_flags"]) == ("gpu01", "idle", [])
    assert (b["state"], b["state_flags"], b["reason"]) == ("mixed", ["DRAIN"], "maintenance")
    assert a["gres"] == "gpu:4" and a["gres_used"] == "gpu:0(IDX:N/A)" and b["gres_used"] == "gpu:2(IDX:0-1)"
    assert a["partitions"] == ["gpu"] and a["cpus"] == 8 and a["real_memory"] == 64000
    assert a["tres"] == "cpu=8,mem=64000M,billing=8,gres/gpu=4" and a["tres_used"] is None
    assert b["tres_used"] == "cpu=4,mem=2000M,gres/gpu=2" and b["idle_cpus"] == 4


def test_partitions():
    part = {"name": "gpu", "default": True, "state": "UP", "max_time": None, "default_time": None,
            "max_nodes": None, "nodes": "gpu[01-02]", "total_nodes": 2, "total_cpus": 16, "total_gpus": 8,
            "priority_tier": 1, "priority_job_factor": 1}
    (p,) = json_out.partitions_document([part], [{"name": "gpu01", "real_memory": 100},
                                                 {"name": "gpu02", "real_memory": 100}])["partitions"]
    assert p["name"] == "gpu" and p["flags"] == ["default"] and p["max_time_limit"] == -1
    assert p["nodes"] == "gpu[01-02]" and p["tres"] == "cpu=16,mem=200M,node=2,billing=16,gres/gpu=8"
    assert "min nodes per job" in p


def acct(**kw):
    r = {"job_id": 5, "display_id": "5", "name": "train", "partition": "gpu", "account": "research",
         "user": "alice", "uid": 1000, "submit": NOW - 100, "eligible": NOW - 100, "time_limit": 3600.0,
         "alloc_cpus": 2, "alloc_gpus": 2, "nnodes": 1, "nodes": "gpu01", "restart": 0, "req_mem": 1000,
         "work_dir": "/w", "cancelled_by": None, "req_cpus": 2, "req_gpus": 2, "req_nodes": 1, "step": None,
         "state": "COMPLETED", "start": NOW - 90, "end": NOW - 30, "exit_code": 0, "exit_signal": 0}
    r.update(kw)
    return r


def test_sacct_jobs_with_steps():
    records = [acct(), acct(step="batch", name="batch", partition=""), acct(step="0", name="python", ntasks=2),
               acct(job_id=6, display_id="6", state="FAILED", exit_code=3),
               acct(job_id=7, display_id="7", state="CANCELLED", exit_signal=15, cancelled_by=0),
               acct(job_id=8, display_id="8", state="PENDING", start=None, end=None, alloc_cpus=0,
                    alloc_gpus=0, nodes="None assigned")]
    jobs = json_out.sacct_document(records, cluster="lab", now=NOW)["jobs"]
    assert [j["job_id"] for j in jobs] == [5, 6, 7, 8]
    j = jobs[0]
    assert j["state"] == {"current": "COMPLETED", "reason": "None"} and j["name"] == "train"
    assert j["time"]["elapsed"] == 60 and j["time"]["limit"] == 60 and j["time"]["submission"] == int(NOW - 100)
    assert j["exit_code"] == {"status": "SUCCESS", "return_code": 0}
    assert [s["step"]["id"] for s in j["steps"]] == ["batch", 0]
    assert j["steps"][1]["step"]["name"] == "python" and j["steps"][1]["tasks"]["count"] == 2
    assert j["steps"][0]["nodes"]["list"] == ["gpu01"]
    assert {"type": "gres", "name": "gpu", "id": 1001, "count": 2} in j["tres"]["allocated"]
    assert {"type": "cpu", "name": None, "id": 1, "count": 2} in j["tres"]["requested"]
    assert jobs[1]["exit_code"] == {"status": "SUCCESS", "return_code": 0}  # 22.05 says so for exit 3
    assert jobs[2]["exit_code"]["status"] == "SIGNALED" and jobs[2]["exit_code"]["signal"]["signal_id"] == 15
    assert jobs[3]["state"]["current"] == "PENDING" and jobs[3]["tres"]["allocated"] == []
    assert jobs[3]["exit_code"] == {"status": "PENDING", "return_code": None}


def test_sacct_array_task_ids():
    jobs = json_out.sacct_document([acct(job_id=11, display_id="10_1"), acct(job_id=10, display_id="10_2"),
                                    acct(job_id=12, display_id="10_[3-4]", state="PENDING")])["jobs"]
    assert [(j["array"]["job_id"], j["array"]["task_id"], j["array"]["task"]) for j in jobs] == [
        (10, 1, None), (10, 2, None), (10, None, "3-4")]


def test_sshare():
    """share_rows has no row for root: the document adds it first, with the top rows' usage."""
    rows = [{"account": "root", "user": "root", "raw_shares": 1, "norm_shares": 0.5, "raw_usage": 0.0,
             "effective_usage": 0.0, "fairshare": 1.0, "norm_usage": 0.0, "level_fs": "inf"},
            {"account": "research", "user": None, "raw_shares": 1, "norm_shares": 0.5, "raw_usage": 10.0,
             "effective_usage": 1.0, "fairshare": None, "norm_usage": 1.0, "level_fs": 0.5},
            {"account": "research", "user": "alice", "raw_shares": 1, "norm_shares": 1.0, "raw_usage": 10.0,
             "effective_usage": 1.0, "fairshare": 0.25, "norm_usage": 1.0, "level_fs": "inf"}]
    root, root_user, research, alice = json_out.sshare_document(rows, {"research": "root"})["shares"]
    assert (root["name"], root["parent"], root["type"], root["usage"]) == ("root", "", ["ASSOCIATION"], 10)
    assert (root_user["name"], root_user["parent"], root_user["type"]) == ("root", "root", ["USER"])
    assert (research["name"], research["parent"], research["type"]) == ("research", "root", ["ASSOCIATION"])
    assert (alice["name"], alice["parent"], alice["type"]) == ("alice", "research", ["USER"])
    assert alice["fairshare"] == {"factor": 0.25, "level": None} and alice["shares"] == 1


def test_yaml_is_the_same_document():
    doc = json_out.jobs_document([job()])
    assert yaml.safe_load(json_out.dump(doc, yaml=True)) == json.loads(json_out.dump(doc))


@pytest.mark.parametrize("command", ["squeue", "sinfo", "sacct", "scontrol", "sshare"])
def test_help_lists_json_and_yaml(command):
    text = importlib.import_module(f"minislurm.cli.{command}").parser().format_help()
    assert "--json" in text and "--yaml" in text, text
