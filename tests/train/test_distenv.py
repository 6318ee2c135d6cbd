"""Slurm -> torch.distributed, and the variables the common launchers read (reference 2.3)."""

import pytest

from minislurm.core.hostlist import expand
from minislurm.slurmd.env import batch_env, step_env, task_env
from minislurm.train.distenv import from_slurm, port_for

JOB = {
    "job_id": 1234567, "inc": 1, "name": "ddp", "user": "alice", "uid": 1000, "gid": 1000, "account": "ml",
    "partition": "gpu", "cluster": "lab", "nodes": ["gpu07", "gpu08"], "cpus_per_node": [16, 16],
    "tasks_per_node": [4, 4], "ntasks": 8, "ntasks_per_node": 4, "cpus_per_task": 4,
    "gpus": {"gpu07": [0, 1, 2, 3], "gpu08": [0, 1, 2, 3]}, "mem_per_node": None, "mem_per_cpu": None,
    "array_job_id": None, "array_task_id": None, "restart_count": 1, "submit_dir": "/home/alice",
    "submit_host": "login", "start_time": 1000.0, "end_time": None, "environment": {}, "open_mode": "append",
}
STEP = {"step_id": 0, "nodes": ["gpu07", "gpu08"], "tasks_per_node": [4, 4],
        "task_ids": [[0, 1, 2, 3], [4, 5, 6, 7]], "ntasks": 8,
        "step_gpus": {"gpu07": [0, 1, 2, 3], "gpu08": [0, 1, 2, 3]}}


def tasks():
    """The environment of every task of an 8-task step, as the agents build it."""
    batch = batch_env(JOB, {"PATH": "/bin"})  # srun runs inside the batch script
    out = []
    for node, ids in zip(STEP["nodes"], STEP["task_ids"]):
        base = step_env(JOB, STEP, node, batch)
        out += [task_env(base, procid=t, localid=i) for i, t in enumerate(ids)]
    return out


def test_every_task_maps_to_a_consistent_rank():
    envs = [from_slurm(e, resolve_host=lambda h: f"addr-of-{h}") for e in tasks()]
    assert [e.rank for e in envs] == list(range(8))
    assert {e.world_size for e in envs} == {8}
    assert [e.local_rank for e in envs] == [0, 1, 2, 3] * 2
    assert [e.node_rank for e in envs] == [0] * 4 + [1] * 4
    assert {e.local_world_size for e in envs} == {4}
    assert {e.master_addr for e in envs} == {"addr-of-gpu07"}
    assert {e.master_port for e in envs} == {port_for(1234567, 1)} == {15000 + (1234567 + 7919) % 20000}
    assert {e.restart_count for e in envs} == {1}


def test_export_writes_the_torch_variables():
    env = from_slurm(tasks()[5], resolve_host=lambda h: "10.0.0.7")
    out = {}
    env.export(out)
    assert out == {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
                   "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": str(port_for(1234567, 1))}


def test_explicit_master_wins_and_non_slurm_is_refused():
    env = dict(tasks()[0], MASTER_ADDR="head", MASTER_PORT="29500")
    d = from_slurm(env)
    assert (d.master_addr, d.master_port) == ("head", 29500)
    with pytest.raises(RuntimeError, match="SLURM_PROCID"):
        from_slurm({})


# What each library reads (reference section 2.3), checked on every task.
LIGHTNING = ["SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NODELIST", "SLURM_JOB_ID",
             "SLURM_JOB_NAME", "SLURM_NTASKS_PER_NODE"]
SUBMITIT = ["SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_JOB_NUM_NODES", "SLURM_NODEID", "SLURM_JOB_NODELIST",
            "SLURM_PROCID", "SLURM_LOCALID"]
IDR_TORCH = ["SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_TASKS_PER_NODE",
             "SLURM_STEP_NUM_NODES", "SLURM_CPUS_PER_TASK", "SLURM_STEP_GPUS", "SLURM_STEP_NODELIST"]


@pytest.mark.parametrize("names", [LIGHTNING, SUBMITIT, IDR_TORCH], ids=["lightning", "submitit", "idr_torch"])
def test_library_contracts(names):
    for env in tasks():
        missing = [n for n in names if n not in env]
        assert not missing, missing
        # Lightning's world size check: ntasks > 1 needs ntasks-per-node
        assert int(env["SLURM_NTASKS"]) == int(env["SLURM_NTASKS_PER_NODE"]) * int(env["SLURM_JOB_NUM_NODES"])
        assert expand(env["SLURM_JOB_NODELIST"]) == ["gpu07", "gpu08"] == expand(env["SLURM_STEP_NODELIST"])
        assert int(env["SLURM_STEP_TASKS_PER_NODE"].split("(")[0]) * int(env["SLURM_STEP_NUM_NODES"]) == \
            int(env["SLURM_STEP_NUM_TASKS"])
        assert env["SLURM_RESTART_COUNT"] == "1"


def test_started_by_hand_with_torch_variables():
    from minislurm.train.distenv import from_environment
    env = from_environment({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4",
                            "MASTER_ADDR": "10.1.1.1", "MASTER_PORT": "29400"})
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size, env.master_port) == (3, 8, 3, 4, 29400)
    assert from_environment(tasks()[2]).rank == 2  # srun's variables win when present
