"""The environment Slurm gives a batch script, a step and each task (reference sections 1.2, 2.1).

Pure functions over the ``job`` facts the controller sends (see :func:`minislurm.ctld.launch.job_info`)
and the step layout, so every variable can be checked without starting a process.
``CUDA_VISIBLE_DEVICES`` carries global GPU indices, as Slurm does without cgroup device
confinement (the lab's ``TaskPlugin=task/none``).
"""

from __future__ import annotations

from minislurm.core.hostlist import compress
from minislurm.core.layout import compress_counts


def _job_common(job: dict, node: str, conf: str | None) -> dict[str, str]:
    nodes = job["nodes"]
    env = {
        "SLURM_JOB_ID": job["job_id"], "SLURM_JOBID": job["job_id"], "SLURM_JOB_NAME": job["name"],
        "SLURM_JOB_NODELIST": compress(nodes), "SLURM_JOB_NUM_NODES": len(nodes),
        "SLURM_JOB_PARTITION": job["partition"], "SLURM_JOB_ACCOUNT": job["account"], "SLURM_JOB_QOS": "normal",
        "SLURM_JOB_CPUS_PER_NODE": compress_counts(job["cpus_per_node"]),
        "SLURM_CLUSTER_NAME": job["cluster"], "SLURM_SUBMIT_DIR": job["submit_dir"],
        "SLURM_SUBMIT_HOST": job["submit_host"], "SLURMD_NODENAME": node,
        "SLURM_JOB_USER": job["user"], "SLURM_JOB_UID": job["uid"], "SLURM_JOB_GID": job["gid"],
        "SLURM_JOB_START_TIME": int(job["start_time"]),
        "SLURM_PRIO_PROCESS": 0,  # the submitting shell's nice value; minislurm assumes 0
    }
    if job.get("end_time"):
        env["SLURM_JOB_END_TIME"] = int(job["end_time"])
    if conf:
        env["SLURM_CONF"] = conf
    if job.get("cpus_per_task"):
        env["SLURM_CPUS_PER_TASK"] = job["cpus_per_task"]
    if job.get("ntasks_per_node"):
        env["SLURM_NTASKS_PER_NODE"] = job["ntasks_per_node"]
    if job.get("array_job_id") is not None:
        env.update(SLURM_ARRAY_JOB_ID=job["array_job_id"], SLURM_ARRAY_TASK_ID=job["array_task_id"],
                   SLURM_ARRAY_TASK_COUNT=job["array_count"], SLURM_ARRAY_TASK_MIN=job["array_min"],
                   SLURM_ARRAY_TASK_MAX=job["array_max"], SLURM_ARRAY_TASK_STEP=job["array_step"])
    return env


_STEP_GPU_VARS = {"SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"}


def _gpu_vars(gpus: list[int], kind: str) -> dict[str, str]:
    """``kind`` is JOB for the batch script, STEP for tasks of a step."""
    if not gpus:
        return {}
    ids = ",".join(map(str, gpus))
    return {f"SLURM_{kind}_GPUS": ids, "SLURM_GPUS_ON_NODE": len(gpus),
            "CUDA_VISIBLE_DEVICES": ids, "GPU_DEVICE_ORDINAL": ids}


def _strings(env: dict) -> dict[str, str]:
    return {k: str(v) for k, v in env.items()}


def batch_env(job: dict, base: dict[str, str], *, conf: str | None = None) -> dict[str, str]:
    """The batch script's environment: the submitter's (``--export=ALL``) plus Slurm's."""
    node = job["nodes"][0]
    env = dict(base)
    env.update(_strings(_job_common(job, node, conf)))
    extra = {
        "SLURM_NODELIST": compress(job["nodes"]), "SLURM_NNODES": len(job["nodes"]),
        "SLURM_TASKS_PER_NODE": compress_counts(job["tasks_per_node"]),
        "SLURM_CPUS_ON_NODE": job["cpus_per_node"][0], "SLURM_RESTART_COUNT": job["restart_count"],
        "ENVIRONMENT": "BATCH", "HOSTNAME": node,
        "SLURM_PROCID": 0, "SLURM_LOCALID": 0, "SLURM_NODEID": 0, "SLURM_GTIDS": 0,
    }
    if job.get("ntasks"):
        extra.update(SLURM_NTASKS=job["ntasks"], SLURM_NPROCS=job["ntasks"])
    mem = job.get("mem_per_node") or []
    if mem and mem[0] > 0:
        extra["SLURM_MEM_PER_NODE"] = mem[0]
    elif job.get("mem_per_cpu"):
        extra["SLURM_MEM_PER_CPU"] = job["mem_per_cpu"]
    extra.update(_gpu_vars(job["gpus"].get(node, []), "JOB"))
    if job.get("token"):
        extra["SLURM_JWT"] = job["token"]
    env.update(_strings(extra))
    if job.get("het"):
        env.update(het_env(job["het"]))
    return env


# What a heterogeneous job's script is told of each component N, as VAR_HET_GROUP_N (the
# names Slurm 22.05 gives them, seen on the twin).
_HET_VARS = ("SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_JOB_CPUS_PER_NODE",
             "SLURM_JOB_PARTITION", "SLURM_JOB_ACCOUNT", "SLURM_JOB_QOS", "SLURM_CPUS_PER_TASK",
             "SLURM_NTASKS_PER_NODE", "SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU", "SLURM_NTASKS", "SLURM_NPROCS",
             "SLURM_TASKS_PER_NODE")


def het_env(components: list[dict]) -> dict[str, str]:
    """``SLURM_HET_SIZE`` and each component's job variables with ``_HET_GROUP_N`` appended;
    the unsuffixed ones stay the leader's."""
    env = {"SLURM_HET_SIZE": str(len(components))}
    for n, comp in enumerate(components):
        own = batch_env({**comp, "token": None}, {})
        env.update({f"{k}_HET_GROUP_{n}": v for k, v in own.items() if k in _HET_VARS})
    return env


def step_env(job: dict, step: dict, node: str, base: dict[str, str], *, conf: str | None = None,
             launcher: tuple[str, int] | None = None, common: dict[str, str] | None = None) -> dict[str, str]:
    """What every task of a step on ``node`` shares (the srun environment plus the step's).
    ``common``: :func:`step_common` of the same arguments, made once for the hundreds of nodes
    of one launch (its node lists and counts cost more to write out than all the rest)."""
    env = dict(common if common is not None else step_common(job, step, base, conf=conf, launcher=launcher))
    i = step["nodes"].index(node)
    cpus = step["node_cpus"][i] if step.get("node_cpus") else job["cpus_per_node"][job["nodes"].index(node)]
    env.update(SLURMD_NODENAME=node, SLURM_CPUS_ON_NODE=str(cpus),
               SLURM_NODEID=str(i), SLURM_GTIDS=",".join(map(str, step["task_ids"][i])))
    gpus = _gpu_vars(step["step_gpus"].get(node, []), "STEP")
    for name in _STEP_GPU_VARS - gpus.keys():  # a step without GPUs sees none of its job's (22.05)
        env.pop(name, None)
    env.update(_strings(gpus))
    if job.get("het_step"):
        env["SLURM_NODEID"] = str(job["het_step"]["nodes"].index(node))
    return env


def step_common(job: dict, step: dict, base: dict[str, str], *, conf: str | None = None,
                launcher: tuple[str, int] | None = None) -> dict[str, str]:
    """The part of :func:`step_env` that is the same on every node of the step; the variables
    each node sets for itself are here already, empty, so that they keep their place."""
    env = dict(base)
    env.update(_strings(_job_common(job, "", conf)))
    nodes = step["nodes"]
    counts = compress_counts(step["tasks_per_node"])
    extra = {
        "SLURM_STEP_ID": step["step_id"], "SLURM_STEPID": step["step_id"],
        "SLURM_STEP_NODELIST": compress(nodes), "SLURM_NODELIST": compress(nodes),
        "SLURM_STEP_NUM_NODES": len(nodes), "SLURM_NNODES": len(nodes),
        "SLURM_STEP_NUM_TASKS": step["ntasks"], "SLURM_NTASKS": step["ntasks"], "SLURM_NPROCS": step["ntasks"],
        "SLURM_STEP_TASKS_PER_NODE": counts, "SLURM_TASKS_PER_NODE": counts,
        "SLURM_CPUS_ON_NODE": "", "SLURM_NODEID": "", "SLURM_GTIDS": "",
        "SLURM_DISTRIBUTION": "block",
    }
    if step.get("cpus_per_task"):
        extra["SLURM_CPUS_PER_TASK"] = step["cpus_per_task"]
    if launcher:
        host, port = launcher
        extra.update(SLURM_LAUNCH_NODE_IPADDR=host, SLURM_SRUN_COMM_HOST=host, SLURM_SRUN_COMM_PORT=port,
                     SLURM_STEP_LAUNCHER_PORT=port)
    if job.get("het_step"):
        extra.update(_het_step(job["het_step"]))
    env.update(_strings(extra))
    return env


def _het_step(whole: dict) -> dict:
    """A step over several components of a heterogeneous job tells every task of the whole
    step (all its nodes and tasks, the leader's job id; :func:`step_env` adds its node index
    among them) and of the components' allocations together, as Slurm 22.05 does."""
    counts = compress_counts(whole["tasks_per_node"])
    nodes = compress(whole["nodes"])
    return {
        "SLURM_JOB_ID": whole["job_id"], "SLURM_JOBID": whole["job_id"],
        "SLURM_JOB_NODELIST": compress(whole["job_nodes"]), "SLURM_JOB_NUM_NODES": len(whole["job_nodes"]),
        "SLURM_JOB_CPUS_PER_NODE": compress_counts(whole["job_cpus"]),
        "SLURM_STEP_NODELIST": nodes, "SLURM_NODELIST": nodes,
        "SLURM_STEP_NUM_NODES": len(whole["nodes"]), "SLURM_NNODES": len(whole["nodes"]),
        "SLURM_STEP_NUM_TASKS": whole["ntasks"], "SLURM_NTASKS": whole["ntasks"], "SLURM_NPROCS": whole["ntasks"],
        "SLURM_STEP_TASKS_PER_NODE": counts, "SLURM_TASKS_PER_NODE": counts,
    }


def task_env(step_base: dict[str, str], *, procid: int, localid: int,
             gpus: list[int] | None = None) -> dict[str, str]:
    """One task: its global and local rank.  ``gpus`` narrows the task's GPU variables when bound
    (``--gpus-per-task``: CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL and SLURM_STEP_GPUS, as 22.05
    does; SLURM_GPUS_ON_NODE stays the step's); otherwise every task sees all of the step's GPUs
    on its node."""
    env = dict(step_base)
    env["SLURM_PROCID"] = str(procid)
    env["SLURM_LOCALID"] = str(localid)
    if gpus is not None:
        ids = ",".join(map(str, gpus))
        env["CUDA_VISIBLE_DEVICES"] = env["GPU_DEVICE_ORDINAL"] = env["SLURM_STEP_GPUS"] = ids
    return env
