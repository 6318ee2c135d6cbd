"""Job steps: what ``srun`` gets inside an allocation.

Each step gets its own share of its job's CPUs and GPUs on its nodes, kept until it ends, as
Slurm 22.05 shares them out (:mod:`minislurm.core.stepfit`: by default all of the job's CPUs
and GPUs on the step's nodes, with ``--exact`` or ``-c`` the CPUs its tasks need, with
``--gres``/``--gpus`` the lowest free GPU indices).  A step whose share is held by running
steps waits, inside its request, until a step of its job ends (or the time srun gives, its
``wait``), and is then refused ``Requested nodes are busy``: srun says so and asks again, as
22.05's srun does after each wait.  Slurm 22.05's srun, woken by nothing, asks again only
every SlurmctldTimeout; minislurm wakes it when a step ends, as later Slurm does.

The controller numbers steps (0, 1, ...), signs a credential that lets srun start the tasks on
the agents (it binds the job, its incarnation, the step, the user, and the tasks, CPUs and
GPUs on each node: see :mod:`minislurm.common.auth`), and keeps a record of each step for sacct.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.states import JobState
from minislurm.core.stepfit import StepBusy, StepLayout, StepLayoutError, StepRequest, step_layout
from minislurm.ctld.launch import job_info

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller

TREE_WIDTH = 50  # Slurm 22.05's default TreeWidth (checked on the twin): srun reaches this many agents


def _fail(job_id: int, why: str, note: str | None = None) -> SlurmError:
    """Slurm's refusal; a ``note`` is a line srun prints before it."""
    text = f"Unable to create step for job {job_id}: {why}"
    return SlurmError(f"{note}\n{text}" if note else text)


async def create(ctl: "Controller", user: str, job_id: int, req: dict) -> dict:
    """A step of a job: on the job's own nodes; with ``het`` (``srun A : B``, ``srun
    --het-group=N``) on the heterogeneous job's components that it names, one step id for all."""
    job = ctl.job(job_id)
    ctl.may_modify(user, job)
    ctl.running.heard_from(job)
    if req.get("het") is not None:
        return await _create_het(ctl, job, req["het"])
    _check_running(job, job_id)
    layout = await _lay_out(ctl, job, req, errors_of=job_id, wait=req.get("wait") or 0)
    part = _record(ctl, job, req, layout, _next_step(ctl, job), first_task=0)
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


async def _lay_out(ctl: "Controller", job, req: dict, *, errors_of: int, wait: float = 0) -> StepLayout:
    """The step's place in ``job`` beside its running steps.  Busy: wait up to ``wait``
    seconds for a step of the job to end (shown meanwhile as a pending step), then refuse."""
    names = ctl.state.nodes.names
    job_nodes = [names[n] for n in job.alloc.nodes]
    run = ctl.run_of(job)
    try:
        return step_layout(job_nodes, job.alloc.cpus, dict(zip(job_nodes, job.alloc.gpus)), StepRequest.of(req),
                           job_ntasks=job.ntasks, held=_held(run), job_gpu_request=_gpu_request(job))
    except StepBusy:
        if wait > 0:
            pending = {"ntasks": req.get("ntasks") or 1, "nodes": req.get("nodes") or 1,
                       "cpus": (req.get("ntasks") or 1) * (req.get("cpus_per_task") or 1)}
            run.pending_steps.append(pending)
            try:
                await ctl.wait_change(job.job_id, wait)
            finally:
                run.pending_steps.remove(pending)
        raise _fail(errors_of, errors.NODES_BUSY) from None
    except StepLayoutError as exc:
        if str(exc) == errors.INSUFFICIENT_GRES:  # 22.05 finds this after numbering the step: its id is gone
            _next_step(ctl, job)
            await ctl.store.commit()
        raise _fail(errors_of, str(exc), exc.note) from None


def _held(run) -> dict[str, tuple[int, set[int]]]:
    """What the run's steps hold on each node: CPUs and GPU indices (``--overlap`` ones nothing)."""
    held: dict[str, tuple[int, set[int]]] = {}
    for step in run.steps.values():
        if step["state"] != "RUNNING" or step.get("overlap"):
            continue
        for node, cpus in zip(step["nodes"], step.get("node_cpus") or ()):
            had_cpus, had_gpus = held.get(node, (0, set()))
            held[node] = (had_cpus + cpus, had_gpus | set(step["step_gpus"].get(node, ())))
    return held


def _gpu_request(job) -> tuple[str, int] | None:
    """How the job asked for GPUs: ("node", N) for --gres=gpu:N or --gpus-per-node=N, ("job", N)
    for --gpus=N (what 22.05's refusals of a larger step compare with)."""
    spec = job.spec
    gres = [g.count for g in getattr(spec, "gres", None) or () if g.name == "gpu"]
    if gres or getattr(spec, "gpus_per_node", None):
        return "node", gres[0] if gres else spec.gpus_per_node[1]
    if getattr(spec, "gpus", None):
        return "job", spec.gpus[1]
    return None


def _record(ctl: "Controller", job, req: dict, layout: StepLayout, step_id: int, *, first_task: int) -> dict:
    """Record and sign the step's part in ``job``; its tasks are numbered from ``first_task``
    (a heterogeneous step has one rank space over its components)."""
    nodes, counts, gpus = layout.nodes, layout.tasks_per_node, layout.gpus
    task_ids = [[first_task + t for t in ids] for ids in layout.task_ids]
    step = {"step_id": step_id, "name": req.get("name") or "srun", "nodes": nodes, "tasks_per_node": counts,
            "task_ids": task_ids, "ntasks": layout.ntasks, "gpus": sum(len(g) for g in gpus.values()),
            "cpus": sum(layout.cpus), "node_cpus": layout.cpus, "step_gpus": gpus,
            "cpus_per_task": req.get("cpus_per_task"),  # -c; None: one CPU a task, SLURM_CPUS_PER_TASK unset
            "mem": _memory(job, nodes, layout.cpus, req), "overlap": bool(req.get("overlap")),
            "state": "RUNNING", "start": ctl.clock()}
    ctl.run_of(job).steps[step_id] = step
    ctl.save_step(job, step)
    info = job_info(ctl, job)
    addrs = {n: ctl.agents[n].addr for n in nodes}
    credential = ctl.signer.step_credential(
        job_id=job.job_id, incarnation=job.restart_count, step_id=step_id, user=job.user, uid=info["uid"],
        gid=info["gid"], tasks=dict(zip(nodes, task_ids)), gpus=gpus, cpus=layout.cpus,
        cpus_per_task=req.get("cpus_per_task"), addrs=addrs)
    return {
        **step, "job": info,
        "addrs": addrs, "credential": credential, "tree_width": int(ctl.config.other.get("TreeWidth", TREE_WIDTH)),
    }


def _memory(job, nodes: list[str], cpus: list[int], req: dict) -> int:
    """The memory the step asked for in all (MB; what sacct's AllocTRES shows): --mem-per-cpu
    (in a batch script, SLURM_MEM_PER_CPU) times its CPUs, else --mem per node, else the job's."""
    if req.get("mem_per_cpu"):
        return req["mem_per_cpu"] * sum(cpus)
    per_node = req.get("mem") or job.shape.mem
    return max(per_node, 0) * len(nodes)


async def _create_het(ctl: "Controller", job, groups: list[dict]) -> dict:
    """One step over the components each group names (``group``: the het group, 0 the leader),
    with one rank space in the order given, as Slurm 22.05 numbers them: the tasks of the
    first group are 0..n-1, the next group's follow.  Each component records its own part
    (sacct's ``J+0.S`` and ``J+1.S``) and gets its own credential; the reply is the whole step,
    with each part under ``parts``.  A job that is not heterogeneous has group 0 only."""
    parts_of = ctl.state.het_components(job)
    leader = parts_of[0]
    top, highest = max(g["group"] for g in groups), len(parts_of) - 1
    if top > highest:
        raise SlurmError(f"{errors.HET_GROUP_BEYOND} ({top} > {highest})" if len(groups) == 1 else
                         f"{errors.HET_GROUP_ABOVE} {top}, but the job allocation has maximum value of {highest}")
    for c in parts_of:
        _check_running(c, leader.job_id)
    layouts = [await _lay_out(ctl, parts_of[g["group"]], g, errors_of=leader.job_id) for g in groups]
    step_id = _next_step(ctl, leader)
    parts, first = [], 0
    for g, layout in zip(groups, layouts):
        part = _record(ctl, parts_of[g["group"]], g, layout, step_id, first_task=first)
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
    ctl.tell(job_id)  # a step waiting for what this one held asks again
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
