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
    """A step of a job: on the job's own nodes; with ``het`` (``srun A : B``, ``srun
    --het-group=N``) on the heterogeneous job's components that it names, one step id for all."""
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    ctl.running.heard_from(job)
    if req.get("het") is not None:
        return await _create_het(ctl, job, req["het"])
    _check_running(job, job_id)
    step_id = _next_step(ctl, job)
    part = _component_step(ctl, job, req, step_id, first_task=0, errors_of=job_id)
    await ctl.store.commit()
    return part


def _check_running(job, job_id: int) -> None:
    if job.state is not JobState.RUNNING:
        raise _fail(job_id, "Job/step already completing or completed" if job.state.finished
                    else "Job is pending execution")


def _next_step(ctl: "Controller", job) -> int:
    """The next step id: a heterogeneous job numbers the steps of all its components as one."""
    leader = ctl.state.jobs.get(job.het_job_id) if job.het_job_id is not None else job
    live = ctl.live[leader.job_id]
    step_id = live.next_step
    live.next_step += 1
    ctl.save_job(leader)
    return step_id


def _component_step(ctl: "Controller", job, req: dict, step_id: int, *, first_task: int, errors_of: int) -> dict:
    """Lay out, record and sign the step's part in ``job``; its tasks are numbered from
    ``first_task`` (a heterogeneous step has one rank space over its components)."""
    names = ctl.state.nodes.names
    job_nodes = [names[n] for n in job.alloc.nodes]
    try:
        layout = step_layout(job_nodes, job.alloc.cpus, dict(zip(job_nodes, job.alloc.gpus)), job_ntasks=job.ntasks,
                             nodelist=req.get("nodelist") or (), nodes=req.get("nodes"), ntasks=req.get("ntasks"),
                             ntasks_per_node=req.get("ntasks_per_node"), cpus_per_task=req.get("cpus_per_task"),
                             overcommit=bool(req.get("overcommit")), gpus_per_node=req.get("gpus_per_node"))
    except StepLayoutError as exc:
        raise _fail(errors_of, str(exc)) from None
    nodes, counts, gpus, cpt = layout.nodes, layout.tasks_per_node, layout.gpus, req.get("cpus_per_task") or 1
    task_ids = [[first_task + t for t in ids] for ids in layout.task_ids]
    step = {"step_id": step_id, "name": req.get("name") or "srun", "nodes": nodes, "tasks_per_node": counts,
            "task_ids": task_ids, "ntasks": layout.ntasks, "gpus": sum(len(g) for g in gpus.values()),
            "cpus": sum(c * cpt for c in counts), "state": "RUNNING", "start": ctl.clock()}
    ctl.run_of(job).steps[step_id] = step
    ctl.save_step(job, step)
    info = job_info(ctl, job)
    addrs = {n: ctl.agents[n].addr for n in nodes}
    credential = ctl.signer.step_credential(
        job_id=job.job_id, incarnation=job.restart_count, step_id=step_id, user=job.user, uid=info["uid"],
        gid=info["gid"], tasks=dict(zip(nodes, task_ids)), gpus=gpus, cpus_per_task=req.get("cpus_per_task"),
        addrs=addrs)
    return {
        **step, "job": info, "step_gpus": gpus, "cpus_per_task": req.get("cpus_per_task"),
        "addrs": addrs, "credential": credential, "tree_width": int(ctl.config.other.get("TreeWidth", TREE_WIDTH)),
    }


async def _create_het(ctl: "Controller", job, groups: list[dict]) -> dict:
    """One step over the components each group names (``group``: the het group, 0 the leader),
    with one rank space in the order given, as Slurm 22.05 numbers them: the tasks of the
    first group are 0..n-1, the next group's follow.  Each component records its own part
    (sacct's ``J+0.S`` and ``J+1.S``) and gets its own credential; the reply is the whole step,
    with each part under ``parts``.  A job that is not heterogeneous has group 0 only."""
    parts_of = ctl.state.het_components(job)
    leader = parts_of[0]
    for g in groups:
        if g["group"] >= len(parts_of):
            raise SlurmError(f"{errors.HET_GROUP_BEYOND} ({g['group']} > {len(parts_of) - 1})")
    for c in parts_of:
        _check_running(c, leader.job_id)
    step_id = _next_step(ctl, leader)
    parts, first = [], 0
    for g in groups:
        part = _component_step(ctl, parts_of[g["group"]], g, step_id, first_task=first, errors_of=leader.job_id)
        parts.append(part)
        first += part["ntasks"]
    await ctl.store.commit()
    nodes = [n for p in parts for n in p["nodes"]]
    whole = {"nodes": nodes, "tasks_per_node": [c for p in parts for c in p["tasks_per_node"]], "ntasks": first,
             "job_nodes": [n for p in parts for n in p["job"]["nodes"]],
             "job_cpus": [c for p in parts for c in p["job"]["cpus_per_node"]], "job_id": leader.job_id}
    for p in parts:
        p["job"]["het_step"] = whole
    return {**parts[0], "nodes": nodes, "ntasks": first, "tasks_per_node": whole["tasks_per_node"],
            "task_ids": [t for p in parts for t in p["task_ids"]],
            "addrs": {n: a for p in parts for n, a in p["addrs"].items()},
            "credentials": {n: p["credential"] for p in parts for n in p["nodes"]}, "parts": parts}


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
