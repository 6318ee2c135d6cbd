"""The Filter stage: may a pending job be considered at all right now?  If not, why not.

Returns Slurm's pending reason for the first obstacle found, or ``None`` when only
resources (and higher-priority jobs) stand in the way.
"""

from __future__ import annotations

import numpy as np

from minislurm.core.hostlist import compress
from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched import depend
from minislurm.sched.select.cons_tres import type_mask


def blocked_reason(job: Job, state: ClusterState, now: float) -> str | None:
    if job.hold:
        return Reason.HELD_ADMIN if job.hold == "admin" else Reason.HELD_USER
    if job.dependency is not None:
        dep = depend.status(job, state.jobs, state.array_tasks)
        if dep == depend.WAIT:
            return Reason.DEPENDENCY
        if dep == depend.NEVER:
            return Reason.DEPENDENCY_NEVER
    if job.begin_time > now:
        return Reason.BEGIN_TIME
    part = state.partitions.get(job.partition)
    if part is None or part.state == "INACTIVE":
        return Reason.PARTITION_INACTIVE
    if part.state == "DOWN":
        return Reason.PARTITION_DOWN
    if job.time_limit > part.max_time:
        return Reason.PARTITION_TIME_LIMIT
    if job.num_nodes > part.max_nodes or job.num_nodes > len(part.nodes):
        return Reason.PARTITION_NODE_LIMIT
    if job.array_max_running is not None and job.array_job_id is not None:
        if state.array_running[job.array_job_id] >= job.array_max_running:
            return Reason.ARRAY_TASK_LIMIT
    if job.reservation is not None:
        resv = state.reservations.get(job.reservation)
        if resv is None or not resv.active(now):
            return Reason.RESERVATION
    if job.req_nodes:
        idx = state.nodes.index
        down = sorted(n for n in job.req_nodes if not state.nodes.usable[idx[n]])
        if down:
            return Reason.unavailable_nodes(compress(down))
    return None


def node_filter(job: Job, state: ClusterState, now: float, base: np.ndarray,
                honour_reservations: bool = True) -> np.ndarray:
    """The nodes this job may be placed on now: its partition's usable nodes (``base``), minus
    ``-x``, limited to ``-w`` and its GPU type, and minus advance reservations it may not use.

    A reservation blocks a node from the moment the job would overlap its window.
    """
    mask = base
    nodes = state.nodes
    tm = type_mask(job, nodes)
    if tm is not None:
        mask = mask & tm
    if job.exc_nodes:
        mask = mask.copy()
        for name in job.exc_nodes:
            if name in nodes.index:
                mask[nodes.index[name]] = False
    if job.req_nodes:
        only = np.zeros(len(nodes), dtype=bool)
        only[[nodes.index[n] for n in job.req_nodes if n in nodes.index]] = True
        mask = mask & only
    if not state.reservations:
        return mask
    end = now + job.time_limit
    for resv in state.reservations.values():
        idx = [nodes.index[n] for n in resv.nodes if n in nodes.index]
        if job.reservation == resv.name:
            inside = np.zeros(len(nodes), dtype=bool)
            inside[idx] = True
            mask = mask & inside
        elif honour_reservations and resv.start < end and resv.end > now:
            mask = mask.copy()
            mask[idx] = False
    return mask
