"""Accounting: one record per job incarnation and per step, what ``sacct`` reads.

A requeued job keeps its id; each run is its own record (told apart by ``restart``), so
``sacct -D`` can show the NODE_FAIL run and the COMPLETED one.  Batch jobs also get a
``N.batch`` step record, and every srun a ``N.<step>`` record.  Beyond sacct's fields, the job
line keeps its allocation per node (``alloc_nodes``) and a step what it used on each node, per
task and per GPU (``node_usage``): what ``jobstats`` reports.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from minislurm.core.hostlist import compress
from minislurm.core.job import Job
from minislurm.core.states import JobState

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def _base(ctl: "Controller", job: Job) -> dict:
    live = ctl.live[job.job_id]
    names = ctl.state.nodes.names
    alloc = job.alloc
    return {
        "job_id": job.shown_id, "display_id": job.display_id, "name": job.name, "partition": job.partition,
        "het_job_id": job.het_job_id, "het_job_offset": job.het_job_offset,
        "account": job.account, "user": job.user, "uid": live.uid, "submit": job.submit_time,
        "eligible": max(job.submit_time, job.begin_time),
        "time_limit": None if job.time_limit == float("inf") else job.time_limit,
        "alloc_cpus": alloc.num_cpus if alloc else 0, "alloc_gpus": alloc.num_gpus if alloc else 0,
        "nnodes": len(alloc.nodes) if alloc else job.num_nodes,
        "nodes": compress(names[n] for n in alloc.nodes) if alloc else "None assigned",
        "restart": job.restart_count, "req_mem": job.shape.mem, "work_dir": live.work_dir,
        "cancelled_by": live.cancelled_by,
        # what was asked for (ReqTRES): per node times nodes
        "req_cpus": job.num_nodes * job.shape.cpus, "req_gpus": job.num_nodes * job.shape.gpus,
        "req_nodes": job.num_nodes,
    }


def record_job(ctl: "Controller", job: Job, *, state: JobState | None = None, end: float | None = None,
               exit_code: int | None = None, batch: bool = True) -> None:
    """Write (or rewrite) the record of the job's current incarnation, and (``batch``) its batch step."""
    row = _base(ctl, job)
    state = state or job.state
    row.update(step=None, state=state.name, start=job.start_time,
               end=end if end is not None else (job.end_time if state.finished else None),
               exit_code=job.exit_code if exit_code is None else exit_code, exit_signal=job.exit_signal)
    alloc, names = job.alloc, ctl.state.nodes.names
    row["alloc_nodes"] = [{"node": names[n], "cpus": c, "mem": m, "gpus": list(g)}  # per node, for jobstats
                          for n, c, m, g in zip(alloc.nodes, alloc.cpus, alloc.mem, alloc.gpus)] if alloc else []
    if state is JobState.PENDING:
        row.update(start=None, alloc_cpus=0, alloc_gpus=0, nodes="None assigned", alloc_nodes=[])
    row.update(_job_usage(ctl, job))
    ended = {"exit_code": row["exit_code"], "exit_signal": row["exit_signal"]}
    if state in (JobState.TIMEOUT, JobState.CANCELLED, JobState.REQUEUED):
        row.update(exit_code=0, exit_signal=0)  # the job line says 0:0 (22.05); its batch step, how the shell ended
    ctl.store.put_acct(job.job_id, job.restart_count, "", row)
    if batch and ctl.live[job.job_id].batch and job.alloc is not None and state is not JobState.PENDING:
        # steps carry no requester: sacct prints a cancelled step as plain CANCELLED
        run = ctl.runs.get(job.job_id)
        used = (run.batch_usage if run else None) or {}
        batch = dict(row, **ended, step="batch", ntasks=1, name="batch", partition="", nnodes=1, cancelled_by=None,
                     total_cpu=used.get("cpu"), max_rss=used.get("rss"), alloc_nodes=None,
                     node_usage={names[job.alloc.nodes[0]]: used} if used else None,
                     nodes=ctl.state.nodes.names[job.alloc.nodes[0]] if job.alloc else row["nodes"],
                     alloc_cpus=job.alloc.cpus[0] if job.alloc else 0,
                     alloc_gpus=len(job.alloc.gpus[0]) if job.alloc else 0)
        if state in (JobState.TIMEOUT, JobState.CANCELLED, JobState.NODE_FAIL, JobState.REQUEUED):
            batch["state"] = "CANCELLED" if state is not JobState.NODE_FAIL else "NODE_FAIL"
        elif job.reason == "JobLaunchFailure":  # the script never started: its step was cancelled
            batch["state"] = "CANCELLED"
        ctl.store.put_acct(job.job_id, job.restart_count, "batch", batch)


def _job_usage(ctl: "Controller", job: Job) -> dict:
    """The job line's TotalCPU: its steps' (batch included) added up (its MaxRSS stays blank)."""
    run = ctl.runs.get(job.job_id)
    if run is None or run.incarnation != job.restart_count:
        return {}
    cpu = [s["total_cpu"] for s in run.steps.values() if s.get("total_cpu") is not None]
    if run.batch_usage:
        cpu.append(run.batch_usage["cpu"])
    return {"total_cpu": sum(cpu)} if cpu else {}


def record_step(ctl: "Controller", job: Job, step: dict) -> None:
    row = _base(ctl, job)
    row.update(total_cpu=step.get("total_cpu"), max_rss=step.get("max_rss"), node_usage=step.get("node_usage"))
    row.update(step=str(step["step_id"]), name=step["name"], partition="", state=step["state"], ntasks=step["ntasks"],
               start=step["start"], end=step.get("end"), exit_code=step.get("exit_code", 0),
               exit_signal=step.get("exit_signal", 0), alloc_cpus=step["cpus"], alloc_gpus=step["gpus"],
               cpus_per_task=step.get("cpus_per_task") or 1,  # each task's CPUs (a site that binds tasks gives no more)
               alloc_mem=step.get("mem"),
               nnodes=len(step["nodes"]), nodes=compress(step["nodes"]), cancelled_by=None,
               ended_with_job=step.get("ended_with_job", False))
    ctl.store.put_acct(job.job_id, job.restart_count, str(step["step_id"]), row)


def close_steps(ctl: "Controller", job: Job, final: JobState) -> None:
    """Steps still running when their job ends are ended with it: a cancelled, timed-out or
    requeued job's were sent SIGTERM (22.05's sacct: 0:15), whatever srun has yet to say."""
    now = ctl.clock()
    run = ctl.runs.get(job.job_id)
    terminated = final in (JobState.CANCELLED, JobState.TIMEOUT, JobState.REQUEUED)
    for step in (run.steps if run else {}).values():
        if step["state"] == "RUNNING":
            step.update(state="CANCELLED" if final is not JobState.NODE_FAIL else "NODE_FAIL", end=now,
                        ended_with_job=True)
            if terminated:
                step.update(exit_code=0, exit_signal=int(signal.SIGTERM))
            ctl.save_step(job, step)


def query(ctl: "Controller", *, job_ids: list[int] | None = None, user: str | None = None,
          since: float | None = None, duplicates: bool = False) -> list[dict]:
    """Records in job order.  Without ``duplicates`` only each job's latest incarnation.
    The user and time filters run in SQLite, so a student's sacct decodes their own records,
    not the whole class's (which held the controller's loop longer with every job a class ran)."""
    where, params = [], []
    if user is not None:
        where.append("json_extract(data, '$.user') = ?")
        params.append(user)
    if since is not None and not job_ids:
        where.append("(json_extract(data, '$.end') IS NULL OR json_extract(data, '$.end') >= ?)")
        params.append(since)
    if job_ids:
        marks = ",".join("?" * len(job_ids))
        # A heterogeneous job's leader id names every component, as in sacct -j.
        rows = ctl.store.acct(" AND ".join([f"(job_id IN ({marks}) OR json_extract(data, '$.het_job_id') IN ({marks}))",
                                            *where]), (*job_ids, *job_ids, *params))
        array_ids = [j for j in job_ids if j in ctl.state.array_tasks]
        if array_ids:
            tasks = [t for a in array_ids for t in ctl.state.array_tasks[a] if t not in job_ids]
            if tasks:
                rows += ctl.store.acct(" AND ".join([f"job_id IN ({','.join('?' * len(tasks))})", *where]),
                                       (*tasks, *params))
    else:
        rows = ctl.store.acct(" AND ".join(where), tuple(params))
    if not duplicates:  # by JobID: an array's pending tasks all have its id (JobIDRaw)
        latest: dict[str, int] = {}
        for r in rows:
            latest[r["display_id"]] = max(latest.get(r["display_id"], 0), r["restart"])
        rows = [r for r in rows if r["restart"] == latest[r["display_id"]]]
    rows.sort(key=_row_order)
    return rows


_STEP_ORDER = {"": -2, "batch": -1}


def _row_order(r: dict) -> tuple:
    """Job order (an array's tasks together, by task id, whatever ids they started with), then
    incarnation (a heterogeneous job's components by offset in each, as 22.05's sacct -D lists
    them), then the job line, its batch step and its steps by number."""
    head, _, task = r["display_id"].partition("_")
    head, _, offset = head.partition("+")
    step = r["step"] or ""
    return (int(head), int(task or -1), r["restart"], int(offset or -1), _STEP_ORDER.get(step, 0),
            int(step) if step.isdigit() else 0)
