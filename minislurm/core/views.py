"""What the controller tells clients about jobs, nodes and partitions: plain JSON-able dicts.

The API serves these records and the commands (squeue, sinfo, scontrol, sacct) format them,
so both sides agree on one schema, spelled with Slurm's own words.  Times are epoch seconds
(``None`` when unknown); time limits are seconds with ``None`` meaning UNLIMITED.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

from minislurm.core.hostlist import compress
from minislurm.core.job import Job
from minislurm.core.state import ClusterState


class JobView(TypedDict, total=False):
    job_id: int
    array_job_id: int | None
    array_task_id: int | None
    display_id: str  # "12" or "10_3"
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


def _finite(x: float | None) -> float | None:
    return None if x is None or x == math.inf else x


def gres_text(gpus: int, gpu_type: str | None) -> str:
    if not gpus:
        return ""
    return f"gpu:{gpu_type}:{gpus}" if gpu_type else f"gpu:{gpus}"


def job_view(job: Job, state: ClusterState, extra: dict[str, Any] | None = None) -> JobView:
    names = state.nodes.names
    alloc = job.alloc
    nodes = [names[n] for n in alloc.nodes] if alloc else []
    view: JobView = {
        "job_id": job.job_id, "array_job_id": job.array_job_id, "array_task_id": job.array_task_id,
        "display_id": job.display_id, "name": job.name, "user": job.user, "account": job.account,
        "partition": job.partition, "state": job.state.name, "reason": job.reason, "priority": job.priority,
        "nice": job.nice, "submit_time": job.submit_time,
        "eligible_time": max(job.submit_time, job.begin_time),
        "start_time": job.start_time, "end_time": job.end_time, "time_limit": _finite(job.time_limit),
        "num_nodes": job.num_nodes,
        "num_cpus": alloc.num_cpus if alloc else job.num_nodes * job.shape.cpus,
        "num_tasks": job.ntasks, "cpus_per_task": getattr(job.spec, "cpus_per_task", None) or 1,
        "mem_per_node": job.shape.mem, "gres": gres_text(job.shape.gpus, job.shape.gpu_type),
        "nodes": compress(nodes), "gpus": {names[n]: list(g) for n, g in zip(alloc.nodes, alloc.gpus)} if alloc else {},
        "exit_code": f"{job.exit_code}:{job.exit_signal}",
        "restart_count": job.restart_count, "requeue": job.requeue, "exclusive": job.exclusive,
        "hold": job.hold, "dependency": str(job.dependency) if job.dependency else None,
        "reservation": job.reservation, "req_nodes": compress(job.req_nodes), "exc_nodes": compress(job.exc_nodes),
        "expected_start": None, "sched_nodes": "", "batch_host": nodes[0] if nodes else None,
    }
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
    }
