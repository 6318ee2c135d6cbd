"""Job steps: what ``srun`` gets inside an allocation.

By default a step uses every node of the job, one task per node (or the job's task count),
and all of the job's GPUs on those nodes, as Slurm does; its tasks fill the nodes in order, one
each first, then each node up to the CPUs the job holds there (:func:`~minislurm.core.layout.fill`).  The controller numbers steps
(0, 1, ...), signs a credential that lets srun start the tasks on the agents (it binds the
job, its incarnation, the step, the user, and the tasks and GPUs on each node: see
:mod:`minislurm.common.auth`), and keeps a record of each step for sacct.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.layout import StepLayoutError, step_layout
from minislurm.core.states import JobState
from minislurm.ctld.launch import job_info

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller

TREE_WIDTH = 50  # Slurm 22.05's default TreeWidth (checked on the twin): srun reaches this many agents


def _fail(job_id: int, why: str) -> SlurmError:
    return SlurmError(f"Unable to create step for job {job_id}: {why}")


async def create(ctl: "Controller", user: str, job_id: int, req: dict) -> dict:
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    ctl.running.heard_from(job)
    if job.state is not JobState.RUNNING:
        raise _fail(job_id, "Job/step already completing or completed" if job.state.finished
                    else "Job is pending execution")
    names = ctl.state.nodes.names
    job_nodes = [names[n] for n in job.alloc.nodes]
    try:
        layout = step_layout(job_nodes, job.alloc.cpus, dict(zip(job_nodes, job.alloc.gpus)), job_ntasks=job.ntasks,
                             nodelist=req.get("nodelist") or (), nodes=req.get("nodes"), ntasks=req.get("ntasks"),
                             ntasks_per_node=req.get("ntasks_per_node"), cpus_per_task=req.get("cpus_per_task"),
                             overcommit=bool(req.get("overcommit")), gpus_per_node=req.get("gpus_per_node"))
    except StepLayoutError as exc:
        raise _fail(job_id, str(exc)) from None
    nodes, counts, gpus, cpt = layout.nodes, layout.tasks_per_node, layout.gpus, req.get("cpus_per_task") or 1
    live = ctl.live[job_id]
    step_id = live.next_step
    live.next_step += 1
    ctl.save_job(job)
    step = {"step_id": step_id, "name": req.get("name") or "srun", "nodes": nodes, "tasks_per_node": counts,
            "task_ids": layout.task_ids, "ntasks": layout.ntasks, "gpus": sum(len(g) for g in gpus.values()),
            "cpus": sum(c * cpt for c in counts), "state": "RUNNING", "start": ctl.clock()}
    ctl.run_of(job).steps[step_id] = step
    ctl.save_step(job, step)
    await ctl.store.commit()
    info = job_info(ctl, job)
    addrs = {n: ctl.agents[n].addr for n in nodes}
    credential = ctl.signer.step_credential(
        job_id=job_id, incarnation=job.restart_count, step_id=step_id, user=job.user, uid=info["uid"],
        gid=info["gid"], tasks=dict(zip(nodes, step["task_ids"])), gpus=gpus, cpus_per_task=req.get("cpus_per_task"),
        addrs=addrs)
    return {
        **step, "job": info, "step_gpus": gpus, "cpus_per_task": req.get("cpus_per_task"),
        "addrs": addrs, "credential": credential, "tree_width": int(ctl.config.other.get("TreeWidth", TREE_WIDTH)),
    }


async def complete(ctl: "Controller", user: str, job_id: int, step_id: int, exit_code: int, signal: int,
                   usage: dict | None = None) -> None:
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    ctl.running.heard_from(job)
    run = ctl.runs.get(job_id)
    step = run.steps.get(step_id) if run else None
    if step is None or step["state"] != "RUNNING":
        return
    if signal:
        state = "CANCELLED"
    else:
        state = "COMPLETED" if exit_code == 0 else "FAILED"
    step.update(state=state, end=ctl.clock(), exit_code=exit_code, exit_signal=signal,
                ended_with_job=bool(ctl.live[job_id].ending) or job.state is not JobState.RUNNING)
    if usage:
        step.update(total_cpu=usage["cpu"], max_rss=usage["rss"], node_usage=usage.get("nodes"))
    ctl.save_step(job, step)
    await ctl.store.commit()


async def usage(ctl: "Controller", user: str, job_id: int) -> dict:
    """Each running step's usage so far, summed over its nodes (CPU) or the largest (memory),
    and each node's own figures (``nodes``: per task, and its GPUs')."""
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    if job.state is JobState.PENDING:
        raise SlurmError(errors.JOB_PENDING)
    if job.state is not JobState.RUNNING or job.alloc is None:
        raise SlurmError(errors.ALREADY_DONE)
    names = [ctl.state.nodes.names[n] for n in job.alloc.nodes]
    payload = {"job_id": job_id, "inc": job.restart_count}
    replies = await asyncio.gather(*(ctl.rpc.call(ctl.node_addr(n), "/jobs/usage", payload) for n in job.alloc.nodes))
    out: dict[str, dict] = {}
    for node, reply in zip(names, replies):
        for step, u in ((reply or {}).get("steps") or {}).items():
            row = out.setdefault(step, {"step": step, "cpu": 0.0, "max_rss": 0, "max_rss_node": node, "ntasks": 0,
                                        "nodes": {}})
            row["nodes"][node] = u
            row["cpu"] += u["cpu"]
            row["ntasks"] += u["ntasks"]
            if u["rss"] > row["max_rss"]:
                row.update(max_rss=u["rss"], max_rss_node=node)
    return {"job_id": job_id, "steps": sorted(out.values(), key=lambda r: (r["step"] != "batch", r["step"]))}
