"""The Slurm environment of batch scripts, steps and tasks (reference sections 1.2 and 2.1)."""

from minislurm.core.layout import block, compress_counts, task_ids
from minislurm.slurmd.env import batch_env, step_common, step_env, task_env

JOB = {
    "job_id": 42, "inc": 0, "name": "train", "user": "alice", "uid": 1000, "gid": 1000, "account": "ml",
    "partition": "gpu", "cluster": "lab", "nodes": ["gpu01", "gpu02"], "cpus_per_node": [8, 8],
    "tasks_per_node": [4, 4], "ntasks": None, "ntasks_per_node": 4, "cpus_per_task": None,
    "gpus": {"gpu01": [0, 1, 2, 3], "gpu02": [4, 5, 6, 7]}, "mem_per_node": None, "mem_per_cpu": 8000,
    "array_job_id": None, "array_task_id": None, "restart_count": 1, "submit_dir": "/home/alice",
    "submit_host": "login", "start_time": 1000.0, "end_time": 4600.0, "environment": {}, "open_mode": "append",
}


def test_block_layout_and_compressed_counts():
    assert block(10, 3) == [4, 3, 3]
    assert compress_counts(block(10, 3)) == "4,3(x2)"
    assert compress_counts([4, 4]) == "4(x2)"
    assert compress_counts([2, 4, 4, 1]) == "2,4(x2),1"
    assert task_ids([2, 2]) == [[0, 1], [2, 3]]


def test_batch_environment():
    env = batch_env(dict(JOB, ntasks=8), {"HOME": "/home/alice", "SLURM_JOB_ID": "stale"}, conf="/etc/slurm.conf")
    assert env["HOME"] == "/home/alice"
    expected = {
        "SLURM_JOB_ID": "42", "SLURM_JOBID": "42", "SLURM_JOB_NAME": "train", "SLURM_JOB_NODELIST": "gpu[01-02]",
        "SLURM_NODELIST": "gpu[01-02]", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2",
        "SLURM_JOB_PARTITION": "gpu", "SLURM_JOB_CPUS_PER_NODE": "8(x2)", "SLURM_TASKS_PER_NODE": "4(x2)",
        "SLURM_NTASKS": "8", "SLURM_NPROCS": "8", "SLURM_NTASKS_PER_NODE": "4", "SLURM_CLUSTER_NAME": "lab",
        "SLURM_SUBMIT_DIR": "/home/alice", "SLURM_SUBMIT_HOST": "login", "SLURM_RESTART_COUNT": "1",
        "SLURMD_NODENAME": "gpu01", "ENVIRONMENT": "BATCH", "HOSTNAME": "gpu01", "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_JOB_GPUS": "0,1,2,3", "SLURM_GPUS_ON_NODE": "4",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SLURM_CONF": "/etc/slurm.conf", "SLURM_MEM_PER_CPU": "8000",
        "SLURM_JOB_START_TIME": "1000", "SLURM_JOB_END_TIME": "4600", "SLURM_JOB_UID": "1000",
    }
    assert {k: env[k] for k in expected} == expected


def test_ntasks_only_when_asked_for():
    env = batch_env(dict(JOB, ntasks_per_node=None, ntasks=None), {})
    assert "SLURM_NTASKS" not in env and "SLURM_NPROCS" not in env and "SLURM_NTASKS_PER_NODE" not in env


def test_step_and_task_environment():
    step = {"step_id": 0, "nodes": ["gpu01", "gpu02"], "tasks_per_node": [4, 4], "task_ids": [[0, 1, 2, 3], [4, 5, 6, 7]],
            "ntasks": 8, "step_gpus": {"gpu01": [0, 1, 2, 3], "gpu02": [4, 5, 6, 7]}}
    base = step_env(JOB, step, "gpu02", {"PATH": "/bin"}, launcher=("10.0.0.1", 4242))
    expected = {
        "SLURM_STEP_ID": "0", "SLURM_STEPID": "0", "SLURM_STEP_NODELIST": "gpu[01-02]", "SLURM_STEP_NUM_NODES": "2",
        "SLURM_STEP_NUM_TASKS": "8", "SLURM_NTASKS": "8", "SLURM_STEP_TASKS_PER_NODE": "4(x2)",
        "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_NODEID": "1", "SLURM_GTIDS": "4,5,6,7", "SLURMD_NODENAME": "gpu02",
        "SLURM_STEP_GPUS": "4,5,6,7", "CUDA_VISIBLE_DEVICES": "4,5,6,7", "SLURM_GPUS_ON_NODE": "4",
        "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.1", "SLURM_DISTRIBUTION": "block", "SLURM_JOB_NUM_NODES": "2",
    }
    assert {k: base[k] for k in expected} == expected
    task = task_env(base, procid=6, localid=2)
    assert (task["SLURM_PROCID"], task["SLURM_LOCALID"], task["CUDA_VISIBLE_DEVICES"]) == ("6", "2", "4,5,6,7")
    bound = task_env(base, procid=6, localid=2, gpus=[6])
    assert (bound["CUDA_VISIBLE_DEVICES"], bound["SLURM_STEP_GPUS"], bound["SLURM_GPUS_ON_NODE"]) == ("6", "6", "4")


def test_a_step_environment_made_once_for_many_nodes_is_each_nodes_own():
    """The agents work out what a step's nodes share once per launch (step_common); each node's
    environment is still exactly its own, in the same order, GPUs and a heterogeneous step too."""
    step = {"step_id": 3, "nodes": ["gpu01", "gpu02"], "tasks_per_node": [2, 1], "task_ids": [[0, 1], [2]],
            "ntasks": 3, "step_gpus": {"gpu01": [0, 1]}, "cpus_per_task": 2}
    het = dict(JOB, het_step={"job_id": 9, "nodes": ["gpu01", "gpu02", "cpu01"], "tasks_per_node": [2, 1, 1],
                              "ntasks": 4, "job_nodes": ["gpu01", "gpu02", "cpu01"], "job_cpus": [8, 8, 4]})
    for job in (JOB, het):
        for base in ({}, {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "7", "SLURM_NODEID": "9"}):
            common = step_common(job, step, base, conf="/etc/slurm.conf", launcher=("10.0.0.1", 4242))
            for node, index in (("gpu01", 0), ("gpu02", 1)):
                alone = step_env(job, step, node, base, conf="/etc/slurm.conf", launcher=("10.0.0.1", 4242))
                shared = step_env(job, step, node, base, common=common)
                assert list(shared.items()) == list(alone.items())
                assert alone["SLURMD_NODENAME"] == node and alone["SLURM_NODEID"] == str(index)
                assert alone["SLURM_GTIDS"] == ("0,1" if index == 0 else "2")
                assert alone.get("CUDA_VISIBLE_DEVICES") == ("0,1" if index == 0 else None)  # none of the job's
    assert "SLURM_NODEID" in common and common["SLURMD_NODENAME"] == ""  # filled in per node, in place


def test_array_variables():
    env = batch_env(dict(JOB, array_job_id=40, array_task_id=2, array_count=4, array_min=0, array_max=6,
                         array_step=2), {})
    assert [env[k] for k in ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
                             "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP")] == \
        ["40", "2", "4", "0", "6", "2"]
