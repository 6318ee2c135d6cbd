"""What the controller sends an agent to start a batch script: everything its environment needs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from minislurm.core.job import Job

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def job_info(ctl: "Controller", job: Job) -> dict:
    """The facts about a running job that every Slurm environment variable is made from."""
    names = ctl.state.nodes.names
    spec = job.spec
    live = ctl.live[job.job_id]
    alloc = job.alloc
    tasks_given = bool(spec and (spec.ntasks or spec.ntasks_per_node))
    info = {
        "job_id": job.job_id, "inc": job.restart_count, "name": job.name, "user": job.user,
        "uid": live.uid, "gid": live.gid, "account": job.account, "partition": job.partition,
        "cluster": ctl.config.cluster_name, "nodes": [names[n] for n in alloc.nodes],
        "cpus_per_node": list(alloc.cpus), "tasks_per_node": ctl.tasks_per_node(job),
        "ntasks": job.ntasks if tasks_given else None,
        "ntasks_per_node": getattr(spec, "ntasks_per_node", None),
        "cpus_per_task": getattr(spec, "cpus_per_task", None),
        "gpus": {names[n]: list(g) for n, g in zip(alloc.nodes, alloc.gpus)},
        "mem_per_node": list(alloc.mem) if spec and spec.mem_mb is not None else None,
        "mem_per_cpu": (spec.mem_per_cpu_mb if spec and spec.mem_per_cpu_mb is not None
                        else ctl.config.def_mem_per_cpu if not (spec and spec.mem_mb is not None) else None),
        "array_job_id": job.array_job_id, "array_task_id": job.array_task_id,
        "restart_count": job.restart_count, "submit_dir": live.work_dir, "submit_host": live.submit_host,
        "start_time": job.start_time,
        "end_time": None if job.time_limit == math.inf else job.start_time + job.time_limit,
        "environment": live.environment, "open_mode": live.open_mode,
    }
    if job.array_job_id is not None:
        tasks = [ctl.state.jobs[t].array_task_id for t in ctl.state.array_tasks[job.array_job_id]]
        info.update(array_count=len(tasks), array_min=min(tasks), array_max=max(tasks),
                    array_step=_step(sorted(tasks)))
    return info


def _step(indices: list[int]) -> int:
    diffs = {b - a for a, b in zip(indices, indices[1:])}
    return diffs.pop() if len(diffs) == 1 else 1


def batch_payload(ctl: "Controller", job: Job) -> dict:
    live = ctl.live[job.job_id]
    lifespan = (job.time_limit if job.time_limit != math.inf else 7 * 86400) + 3600
    payload = {**job_info(ctl, job), "script": live.script, "argv": live.argv, "stdout": live.stdout,
               "stderr": live.stderr,
               "stdin": live.stdin, "token": ctl.signer.user_token(job.user, lifespan)}
    if job.het_job_offset == 0:  # the script of a heterogeneous job describes every component
        payload["het"] = [job_info(ctl, c) for c in ctl.state.het_components(job)]
    return payload
