"""What the API tells clients about jobs and nodes: the core views plus what only the live
cluster knows (output paths, the planned start, the dependency's state, agents' addresses,
who set a node's reason), so squeue, scontrol and sinfo can print what Slurm's do."""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING

from minislurm.core.hostlist import compress
from minislurm.core.patterns import expand_pattern
from minislurm.core.views import JOB_ATTRS, JOB_FIELDS, node_view
from minislurm.ctld.jobs import dependency_text

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def _out(ctl: "Controller", job, key: str):
    """StdOut/StdErr with the patterns expanded; absent for a job with no such file."""
    live = ctl.live[job.job_id]
    pattern = live.stdout if key == "stdout" else live.stderr or live.stdout
    if not (live.batch and pattern):
        return _ABSENT
    node = ctl.state.nodes.names[job.alloc.nodes[0]] if job.alloc else ""
    return expand_pattern(pattern if pattern.startswith("/") else f"{live.work_dir}/{pattern}",
                          job_id=job.job_id, job_name=job.name, user=job.user, array_job_id=job.array_job_id,
                          array_task_id=job.array_task_id, node=node, restart_count=job.restart_count)


_ABSENT = object()


def _pending_steps(ctl: "Controller", job):
    """The job's step requests waiting for CPUs or GPUs its steps hold (scontrol show step)."""
    run = ctl.runs.get(job.job_id)
    return list(run.pending_steps) if run is not None and run.pending_steps else _ABSENT

# What only the live cluster knows, read as (controller, job); these override JOB_FIELDS.
LIVE_FIELDS = {
    "work_dir": lambda c, j: c.live[j.job_id].work_dir, "command": lambda c, j: c.live[j.job_id].command,
    "batch": lambda c, j: c.live[j.job_id].batch, "uid": lambda c, j: c.live[j.job_id].uid,
    "gid": lambda c, j: c.live[j.job_id].gid, "qos": lambda c, j: "normal",
    "submit_host": lambda c, j: c.live[j.job_id].submit_host, "tres_bind": lambda c, j: c.live[j.job_id].tres_bind, "array_max_tasks": lambda c, j: j.array_max_running,
    "ntasks_per_node": lambda c, j: getattr(j.spec, "ntasks_per_node", None) or 0,
    "expected_start": lambda c, j: c.expected.get(j.job_id),
    "dependency": lambda c, j: dependency_text(j, c.state) if j.dependency is not None else None,
    "sched_nodes": lambda c, j: compress(c.state.nodes.names[n] for n in c.sched_nodes[j.job_id])
    if j.job_id in c.sched_nodes else "",
    "stdout": lambda c, j: _out(c, j, "stdout"), "stderr": lambda c, j: _out(c, j, "stderr"),
    "pending_steps": _pending_steps,
}
_SOMETIMES = ("stdout", "stderr", "pending_steps")  # left out of a job's view when it has none
# Enum's ``name`` is a Python-level property; ``_name_`` is the same string, read in C.
_PLAIN_ATTRS = {key: attrgetter(attr.replace("state.name", "state._name_"))
                for key, attr in {**JOB_ATTRS, "array_max_tasks": "array_max_running"}.items()}
FIELDS = {**{k: (lambda c, j, read=read: read(j, c.state)) for k, read in JOB_FIELDS.items()}, **LIVE_FIELDS}


def full_job(ctl: "Controller", job) -> dict:
    """Everything squeue, scontrol and sacct may print about a job."""
    view = {key: read(ctl, job) for key, read in FIELDS.items()}
    for key in _SOMETIMES:
        if view[key] is _ABSENT:
            del view[key]
    return view


def job_columns(ctl: "Controller", jobs: list, keys: list[str]) -> list:
    """Only ``keys`` of each job, column by column (``GET /jobs?fields=``): a command printing a
    few columns of 10,000 jobs should not make the controller build and encode every view.  A
    column whose jobs all share one value is sent once, as ``{"all": value}`` (a full queue has
    one partition, a few states, reasons, start times); plain attributes are read by ``map``
    and ``attrgetter``.  An unknown key, or a file the job lacks, reads as None."""
    columns = []
    for key in keys:
        if key in _PLAIN_ATTRS:
            column = list(map(_PLAIN_ATTRS[key], jobs))
        else:
            read = FIELDS.get(key, lambda c, j: None)
            column = [read(ctl, job) for job in jobs]
            if key in _SOMETIMES:
                column = [None if v is _ABSENT else v for v in column]
        if column and column.count(column[0]) == len(column):
            column = {"all": column[0]}
        columns.append(column)
    return columns


def node_views(ctl: "Controller") -> list[dict]:
    parts_of: dict[str, list[str]] = {}
    for p in ctl.state.partitions.values():
        for n in p.nodes:
            parts_of.setdefault(n, []).append(p.name)
    # An idle node in an active reservation is "resv" ("maint" under Flags=MAINT), as in Slurm.
    now, reserved = ctl.clock(), {}
    for r in ctl.state.reservations.values():
        if r.active(now):
            reserved.update(dict.fromkeys(r.nodes, "maint" if "MAINT" in r.flags else "resv"))
    out = []
    for n, name in enumerate(ctl.state.nodes.names):
        view = node_view(ctl.state, n, parts_of.get(name, []))
        if view["state"] == "idle" and name in reserved:
            view["state"] = reserved[name]
        addr = ctl.agents[name].addr
        view["addr"] = addr.rsplit(":", 1)[0] if addr else None
        view["slurmd_start_time"] = ctl.agents[name].boot_time or None
        view["boot_time"] = ctl.agents[name].os_boot_time or None
        if ctl.agents[name].os:
            view["os"] = ctl.agents[name].os
        view["cpu_load"], view["free_mem"] = ctl.agents[name].cpu_load, ctl.agents[name].free_mem
        if ctl.agents[name].reason_set and view["reason"]:
            view["reason_user"], view["reason_time"] = ctl.agents[name].reason_set
        if not ctl.agents[name].registered and not ctl.state.nodes.down[n] and addr is None:
            view["state"] = "unk"  # never heard of; a restarted controller shows saved states (with *)
        out.append(view)
    return out
