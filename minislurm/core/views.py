"""What the controller tells clients about jobs, nodes and partitions: plain JSON-able dicts.

The API serves these records and the commands (squeue, sinfo, scontrol, sacct) format them,
so both sides agree on one schema, spelled with Slurm's own words.  Times are epoch seconds
(``None`` when unknown); time limits are seconds with ``None`` meaning UNLIMITED.
"""

from __future__ import annotations

import math
from operator import attrgetter
from collections.abc import Callable
from typing import Any, TypedDict

from minislurm.core.hostlist import compress
from minislurm.core.job import Job
from minislurm.core.state import ClusterState


class JobView(TypedDict, total=False):
    job_id: int
    array_job_id: int | None
    array_task_id: int | None
    display_id: str  # "12", "10_3", or "14+1" for a heterogeneous job's component
    het_job_id: int | None  # the leader's id, for a heterogeneous job's components
    het_job_offset: int | None
    name: str
    user: str
    account: str
    partition: str
    state: str  # JobState name: PENDING, RUNNING, COMPLETED, ...
    reason: str
    priority: int
    nice: int
    submit_time: float
    eligible_time: float | None
    start_time: float | None
    end_time: float | None
    time_limit: float | None
    num_nodes: int
    num_cpus: int
    num_tasks: int | None
    cpus_per_task: int
    mem_per_node: int  # MB, -1 = all of the node
    gres: str  # per node, e.g. "gpu:4" or ""
    nodes: str  # hostlist, "" when pending
    gpus: dict[str, list[int]]  # node -> GPU indices
    exit_code: str  # "exit:signal"
    restart_count: int
    requeue: bool
    exclusive: bool
    hold: str | None
    dependency: str | None
    reservation: str | None
    req_nodes: str
    exc_nodes: str
    expected_start: float | None  # squeue --start
    sched_nodes: str  # nodes planned by backfill
    batch_host: str | None
    work_dir: str
    stdout: str
    stderr: str
    command: str


class NodeView(TypedDict, total=False):
    name: str
    state: str  # base state, lower case as sinfo prints it: idle, mix, alloc, down, drain, drng
    flags: list[str]  # "NOT_RESPONDING" (shown as *), "DRAIN", ...
    reason: str | None
    cpus: int
    alloc_cpus: int
    real_memory: int
    alloc_mem: int
    gpus: int
    alloc_gpus: list[int]
    gres: str  # "gpu:8" or "gpu:a100:8"
    partitions: list[str]
    addr: str | None
    jobs: list[int]


class PartitionView(TypedDict, total=False):
    name: str
    default: bool
    state: str  # UP, DOWN, DRAIN, INACTIVE
    max_time: float | None
    default_time: float | None
    max_nodes: int | None
    nodes: str
    total_nodes: int
    total_cpus: int
    total_gpus: int
    priority_tier: int
    priority_job_factor: int
    allow_accounts: str  # "ALL" or a comma list
    allow_groups: str


def _finite(x: float | None) -> float | None:
    return None if x is None or x == math.inf else x


def gres_text(gpus: int, gpu_type: str | None) -> str:
    if not gpus:
        return ""
    return f"gpu:{gpu_type}:{gpus}" if gpu_type else f"gpu:{gpus}"


def _het_job_id_set(job: Job, state: ClusterState) -> str | None:
    """``6-7``: the ids of a heterogeneous job's components (scontrol's HetJobIdSet)."""
    if job.het_job_id is None:
        return None
    ids = [c.job_id for c in state.het_components(job)]
    return f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])


def _node_names(job: Job, state: ClusterState) -> list[str]:
    return [state.nodes.names[n] for n in job.alloc.nodes] if job.alloc else []


# JobView keys that are plain attributes of a Job (read together by one ``attrgetter``).
JOB_ATTRS = {
    "job_id": "shown_id", "array_job_id": "array_job_id", "array_task_id": "array_task_id",
    "display_id": "display_id", "name": "name", "user": "user", "account": "account", "partition": "partition",
    "state": "state.name", "reason": "reason", "priority": "priority", "nice": "nice",
    "submit_time": "submit_time", "start_time": "start_time", "end_time": "end_time", "num_nodes": "num_nodes",
    "num_tasks": "ntasks", "mem_per_node": "shape.mem", "restart_count": "restart_count", "requeue": "requeue",
    "exclusive": "exclusive", "hold": "hold", "reservation": "reservation",
    "het_job_id": "het_job_id", "het_job_offset": "het_job_offset",
}
# One entry per JobView key: how to read it from a job (the single source for full views and
# for the few keys a command asks for, ``GET /jobs?fields=...``).
JOB_FIELDS: dict[str, Callable[[Job, ClusterState], Any]] = {
    **{key: (lambda j, s, get=attrgetter(attr): get(j)) for key, attr in JOB_ATTRS.items()},
    "eligible_time": lambda j, s: max(j.submit_time, j.begin_time),
    "time_limit": lambda j, s: _finite(j.time_limit),
    "num_cpus": lambda j, s: j.alloc.num_cpus if j.alloc else j.num_nodes * j.shape.cpus,
    "cpus_per_task": lambda j, s: getattr(j.spec, "cpus_per_task", None) or 1,
    "gres": lambda j, s: gres_text(j.shape.gpus, j.shape.gpu_type),
    "nodes": lambda j, s: compress(_node_names(j, s)) if j.alloc else "",
    "gpus": lambda j, s: {s.nodes.names[n]: list(g) for n, g in zip(j.alloc.nodes, j.alloc.gpus)} if j.alloc else {},
    "exit_code": lambda j, s: f"{j.exit_code}:{j.exit_signal}",
    "dependency": lambda j, s: str(j.dependency) if j.dependency else None,
    "req_nodes": lambda j, s: compress(j.req_nodes) if j.req_nodes else "",
    "exc_nodes": lambda j, s: compress(j.exc_nodes) if j.exc_nodes else "",
    "expected_start": lambda j, s: None, "sched_nodes": lambda j, s: "",
    "batch_host": lambda j, s: s.nodes.names[j.alloc.nodes[0]] if j.alloc and j.alloc.nodes else None,
    "alloc_detail": lambda j, s: _alloc_detail(j, s),
    "max_nodes": lambda j, s: _max_nodes(j),
    "het_job_id_set": lambda j, s: _het_job_id_set(j, s),
    "mem_per_cpu": lambda j, s: _mem_per_cpu(j, s),
    "tres_per": lambda j, s: _tres_per(j),
}


def _max_nodes(job: Job) -> int | None:
    """The node count's upper end when ``-N`` gave one (``-N2``: 2, ``-N1-2``: 2); None without
    ``-N``: scontrol shows a pending job's ``NumNodes=min-max`` only then, as 22.05 does."""
    spec = job.spec
    if spec is None or not getattr(spec, "nodes_min", None):
        return None
    return getattr(spec, "nodes_max", None) or job.num_nodes


def _mem_per_cpu(job: Job, state: ClusterState) -> int | None:
    """MB per CPU when the job's memory is counted per CPU (``--mem-per-cpu`` or, without
    ``--mem``, DefMemPerCPU): scontrol then writes ``MinMemoryCPU=`` instead of ``MinMemoryNode=``."""
    spec = job.spec
    if spec is None or getattr(spec, "mem_mb", None) is not None:
        return None
    return getattr(spec, "mem_per_cpu_mb", None) or state.config.def_mem_per_cpu or None


def _tres_per(job: Job) -> list[str] | None:
    """``[key, value]`` of the job's GPU request as 22.05 writes it: ``TresPerJob`` for
    ``--gpus``, ``TresPerTask`` for ``--gpus-per-task``, else ``TresPerNode`` (``gres:gpu:2``)."""
    spec = job.spec
    if getattr(spec, "gpus", None) and not getattr(spec, "gres", None):
        kind, (gtype, count) = "TresPerJob", spec.gpus
    elif getattr(spec, "gpus_per_task", None) and not getattr(spec, "gres", None):
        kind, (gtype, count) = "TresPerTask", spec.gpus_per_task
    elif job.shape.gpus:
        return ["TresPerNode", "gres:" + gres_text(job.shape.gpus, job.shape.gpu_type)]
    else:
        return None
    return [kind, "gres:" + gres_text(count, gtype)]


def _alloc_detail(job: Job, state: ClusterState) -> list[list]:
    """Per node [name, first CPU id, CPUs, memory MB, GPU indices] (``scontrol show job -d``).
    minislurm counts CPUs, not cores: the ids are numbered in job order on each node (what
    Slurm's first-fit core selection gives when jobs start in that order)."""
    if not job.alloc:
        return []
    out = []
    for n, cpus, mem, gpus in zip(job.alloc.nodes, job.alloc.cpus, job.alloc.mem, job.alloc.gpus):
        before = sum(o.alloc.cpus[o.alloc.nodes.index(n)] for j in state.nodes.jobs[n] if j < job.job_id
                     and (o := state.running.get(j)) is not None and o.alloc is not None)
        out.append([state.nodes.names[n], int(before), int(cpus), int(mem), list(gpus)])
    return out


def job_view(job: Job, state: ClusterState, extra: dict[str, Any] | None = None) -> JobView:
    view: JobView = {key: read(job, state) for key, read in JOB_FIELDS.items()}  # type: ignore[misc]
    if extra:
        view.update(extra)  # type: ignore[typeddict-item]
    return view


def node_view(state: ClusterState, n: int, partitions: list[str]) -> NodeView:
    nodes = state.nodes
    cfg = nodes.configs[n]
    flags = []
    if nodes.no_respond[n]:
        flags.append("NOT_RESPONDING")
    if nodes.drain[n]:
        flags.append("DRAIN")
    return {
        "name": nodes.names[n], "state": nodes.state(n).compact, "flags": flags, "reason": nodes.reason[n],
        "cpus": int(nodes.cap_cpu[n]), "alloc_cpus": int(nodes.cap_cpu[n] - nodes.free_cpu[n]),
        "real_memory": int(nodes.cap_mem[n]), "alloc_mem": int(nodes.cap_mem[n] - nodes.free_mem[n]),
        "gpus": int(nodes.cap_gpu[n]),
        "alloc_gpus": [g for g in range(int(nodes.cap_gpu[n])) if not nodes.gpu_free[n] >> g & 1],
        "gres": gres_text(int(nodes.cap_gpu[n]), cfg.gpu_type), "partitions": partitions,
        "addr": None, "jobs": sorted(nodes.jobs[n]),
    }


def partition_view(state: ClusterState, name: str) -> PartitionView:
    p = state.partitions[name]
    members = [state.nodes.index[n] for n in p.nodes if n in state.nodes.index]
    return {
        "name": p.name, "default": p.default, "state": p.state, "max_time": _finite(p.max_time),
        "default_time": _finite(p.default_time), "max_nodes": None if p.max_nodes == math.inf else int(p.max_nodes),
        "nodes": compress(p.nodes, sort=False), "total_nodes": len(members),
        "total_cpus": int(sum(state.nodes.cap_cpu[i] for i in members)),
        "total_gpus": int(sum(state.nodes.cap_gpu[i] for i in members)),
        "priority_tier": p.priority_tier, "priority_job_factor": p.priority_job_factor,
        "allow_accounts": ",".join(p.allow_accounts) if p.allow_accounts is not None else "ALL",
        "allow_groups": ",".join(p.allow_groups) if p.allow_groups is not None else "ALL",
    }
