"""Submission: turn a JobSpec into schedulable jobs, or refuse it with Slurm's message.

Slurm accepts a job that cannot run *now* (busy nodes, a partition that is down, a time
limit over MaxTime with the default EnforcePartLimits=NO: it pends with a reason), but
refuses one that can *never* run: no node of the partition, in any state, is big enough
(``Requested node configuration is not available``), or an unknown GRES is asked for.

minislurm gives every node of a job the same shape: the largest per-node share of the tasks
(Slurm may give nodes different task counts; ``SLURM_TASKS_PER_NODE`` still shows the block
layout).
"""

from __future__ import annotations

import math
from dataclasses import replace

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.job import Job, Shape
from minislurm.core.spec import JobSpec
from minislurm.core.state import ClusterState
from minislurm.sched.select.cons_tres import fits_capacity

# ESLURM_PARTITION_NOT_AVAIL (slurm_errno.c); kept here as core/errors.py lacks it.
PARTITION_NOT_AVAIL = "Required partition not available (inactive or drain)"


def _gpu_request(spec: JobSpec, gres_types: set[str]) -> tuple[str | None, int, str]:
    """(type, count, kind) with kind "node", "job" or "task"; count 0 when no GPUs are asked for."""
    for item in spec.gres or ():
        if item.name not in gres_types:
            raise SlurmError(errors.INVALID_GRES)
    gpu_items = [g for g in spec.gres or () if g.name == "gpu"]
    wants_gpu = gpu_items or spec.gpus or spec.gpus_per_node or spec.gpus_per_task
    if wants_gpu and "gpu" not in gres_types:
        raise SlurmError(errors.INVALID_GRES)
    if gpu_items:
        return gpu_items[0].type, sum(g.count for g in gpu_items), "node"
    if spec.gpus_per_node:
        return spec.gpus_per_node[0], spec.gpus_per_node[1], "node"
    if spec.gpus_per_task:
        return spec.gpus_per_task[0], spec.gpus_per_task[1], "task"
    if spec.gpus:
        return spec.gpus[0], spec.gpus[1], "job"
    return None, 0, "node"


def _layout(spec: JobSpec, max_cpus: int, max_gpus: int, gpus: int, gpu_kind: str,
            listed: int = 0) -> tuple[int, int, int]:
    """(nodes, tasks, tasks per node on the fullest node).

    ``listed`` is the number of ``-w`` nodes: the job gets at least that many (slurmctld's
    ``_job_create`` raises ``min_nodes`` to the size of the required node list), and its
    tasks are spread over all of them.
    """
    cpt = spec.cpus_per_task or 1
    if spec.nodes_min:
        nodes = spec.nodes_min
    elif spec.ntasks:
        per_node = spec.ntasks_per_node or max(1, max_cpus // cpt)
        if gpu_kind == "task" and gpus:
            per_node = min(per_node, max(1, max_gpus // gpus))
        nodes = math.ceil(spec.ntasks / per_node)
    elif gpu_kind == "job" and gpus and max_gpus:
        nodes = math.ceil(gpus / max_gpus)
    else:
        nodes = 1
    nodes = max(nodes, listed)
    if spec.ntasks:
        tasks = spec.ntasks
    elif spec.ntasks_per_node:
        tasks = spec.ntasks_per_node * nodes
    else:
        tasks = nodes
    per_node = math.ceil(tasks / nodes)
    if spec.ntasks_per_node:
        per_node = min(per_node, spec.ntasks_per_node) if spec.ntasks else spec.ntasks_per_node
    return nodes, tasks, per_node


class NeverRuns(SlurmError):
    """No node could ever hold the job.  slurmctld finds this only after it has created the job
    record (its submit-time ``select_nodes`` test), so the request uses up a job id and is
    accounted FAILED; ``job`` is that record."""

    def __init__(self, message: str, job: Job):
        super().__init__(message)
        self.job = job


def build_jobs(spec: JobSpec, state: ClusterState, *, user: str, now: float,
               default_name: str = "sbatch", account: str | None = None) -> list[Job]:
    """Validate ``spec`` and return its jobs (one, or one per array task), not yet queued.

    The checks run in the order slurmctld makes them (``_job_create`` in job_mgr.c, then the
    submit-time ``select_nodes`` test), so a request with several faults gets Slurm's message:
    ``-w`` names, partition, GRES, ``-x`` names and overlap, node count, reservation,
    dependency, and last "can any node ever hold it".
    """
    cfg = state.config
    for name in spec.nodelist or ():
        if name not in state.nodes.index:
            raise SlurmError(errors.INVALID_NODE_NAME)
    part = cfg.partition(spec.partition.split(",")[0] if spec.partition else None)
    if part is None:
        raise SlurmError(errors.INVALID_PARTITION)
    if part.state in ("DRAIN", "INACTIVE"):
        # ESLURM_PARTITION_NOT_AVAIL: a DRAIN or INACTIVE partition lacks PARTITION_SUBMIT
        # (job_mgr.c _alt_part_test); a DOWN one still queues jobs (PartitionDown).
        raise SlurmError(PARTITION_NOT_AVAIL)
    gpu_type, gpus, gpu_kind = _gpu_request(spec, cfg.gres_types)
    for name in spec.exclude or ():
        if name not in state.nodes.index:
            raise SlurmError(errors.INVALID_NODE_NAME)
    if set(spec.nodelist or ()) & set(spec.exclude or ()):
        raise SlurmError(errors.INVALID_NODE_NAME)  # "Job's required and excluded node lists overlap"
    members = [cfg.node(n) for n in part.nodes if cfg.node(n)]
    max_cpus = max((n.cpus for n in members), default=0)
    max_gpus = max((n.gpus for n in members), default=0)
    listed = len(set(spec.nodelist or ()))
    nodes, tasks, per_node = _layout(spec, max_cpus, max_gpus, gpus, gpu_kind, listed)
    if nodes < 1 or (spec.nodes_max is not None and spec.nodes_max < nodes):
        raise SlurmError(errors.INVALID_NODE_COUNT)
    if spec.ntasks is not None and spec.nodes_min and spec.ntasks < spec.nodes_min:
        nodes = spec.ntasks  # Slurm shrinks the node count to the task count
    cpus = per_node * (spec.cpus_per_task or 1)
    gpus_per_node = {"node": gpus, "task": gpus * per_node, "job": math.ceil(gpus / nodes) if gpus else 0}[gpu_kind]
    if spec.mem_mb is not None:
        mem = -1 if spec.mem_mb == 0 else spec.mem_mb
    elif spec.mem_per_cpu_mb is not None:
        mem = spec.mem_per_cpu_mb * cpus
    elif cfg.def_mem_per_cpu:
        mem = cfg.def_mem_per_cpu * cpus
    else:
        mem = cfg.def_mem_per_node or 0
    shape = Shape(cpus=cpus, mem=mem, gpus=gpus_per_node, gpu_type=gpu_type)
    exclusive = bool(spec.exclusive) or part.exclusive

    time_limit = spec.time_limit_min * 60 if spec.time_limit_min is not None else (
        part.default_time if part.default_time is not None else part.max_time)

    account = spec.account or account or "default"
    if spec.reservation is not None:
        resv = state.reservations.get(spec.reservation)
        if resv is None:
            raise SlurmError(errors.INVALID_RESERVATION)
        if not resv.admits(user, account):
            raise SlurmError("Access denied to requested reservation")
    dependency = spec.dependency
    if dependency is not None:  # Slurm 22.05 drops ids it does not know (a job never run, or long gone)
        terms = tuple((kind, known) for kind, ids in dependency.terms
                      if (known := tuple(i for i in ids if i in state.jobs or i in state.array_tasks))
                      or kind == "singleton")
        dependency = replace(dependency, terms=terms) if terms else None

    template = dict(
        user=user, account=account, partition=part.name, name=spec.job_name or default_name,
        submit_time=now, time_limit=time_limit, num_nodes=nodes, shape=shape, exclusive=exclusive,
        ntasks=tasks, nice=spec.nice or 0, hold="user" if spec.hold else None,
        begin_time=spec.begin or 0.0, dependency=dependency, kill_on_invalid_dep=bool(spec.kill_on_invalid_dep),
        req_nodes=frozenset(spec.nodelist or ()), exc_nodes=frozenset(spec.exclude or ()),
        reservation=spec.reservation,
        requeue=cfg.job_requeue if spec.requeue is None else spec.requeue, spec=spec,
    )
    probe = Job(0, shape=shape, exclusive=exclusive, num_nodes=nodes)
    capable = fits_capacity(probe, state.nodes) & state.partition_mask(part.name)
    for name in spec.exclude or ():
        capable[state.nodes.index[name]] = False
    if (spec.nodelist and not all(capable[state.nodes.index[n]] for n in spec.nodelist)) or (
            nodes <= len(part.nodes) and capable.sum() < nodes):
        raise NeverRuns(errors.NODE_CONFIG_UNAVAILABLE, Job(state.new_job_id(), **template))

    if spec.array is None:
        return [Job(state.new_job_id(), **template)]
    jobs: list[Job] = []
    for index in spec.array.indices:
        job = Job(state.new_job_id(), **template)
        job.array_job_id = jobs[0].job_id if jobs else job.job_id
        job.array_task_id = index
        job.array_max_running = spec.array.max_running
        jobs.append(job)
    return jobs
