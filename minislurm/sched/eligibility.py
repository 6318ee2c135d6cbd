"""The Filter stage: may a pending job be considered at all right now?  If not, why not.

Returns Slurm's pending reason for the first obstacle found, or ``None`` when only
resources (and higher-priority jobs) stand in the way.

A pass hands in what it already knows: the dependency results of its up-front sweep
(:func:`minislurm.sched.depend.sweep`) and the array tasks it has started so far, since the
``%N`` throttle counts those too (slurmctld bumps ``tot_run_tasks`` at each start).
"""

from __future__ import annotations

import numpy as np

from collections.abc import Mapping

from minislurm.core.hostlist import compress
from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched import depend
from minislurm.sched.select.cons_tres import type_mask


def blocked_reason(job: Job, state: ClusterState, now: float, deps: Mapping[int, str] | None = None,
                   array_started: Mapping[int, int] | None = None) -> str | None:
    if job.hold:
        return Reason.held(job.hold)
    if job.dependency_failed:
        return Reason.DEPENDENCY_NEVER
    if job.dependency is not None:
        dep = deps.get(job.job_id) if deps is not None else None
        if dep is None:
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
    if part.allow_accounts is not None and job.account not in part.allow_accounts:
        return Reason.ACCOUNT_NOT_ALLOWED  # select_nodes' part_policy_valid_acct
    if job.time_limit > part.max_time:
        return Reason.PARTITION_TIME_LIMIT
    # More CPUs than the whole partition has (``-N 999999``) is PartitionConfig in Slurm; only
    # then is a node count over the partition's PartitionNodeLimit (seen on Slurm 22.05).
    if job.num_nodes * job.shape.cpus > len(part.nodes) and \
            job.num_nodes * job.shape.cpus > state.partition_cpus(job.partition):
        return Reason.PARTITION_CONFIG
    if job.num_nodes > part.max_nodes or job.num_nodes > len(part.nodes):
        return Reason.PARTITION_NODE_LIMIT
    if job.array_max_running is not None and job.array_job_id is not None:
        running = state.array_running.get(job.array_job_id, 0)
        if array_started:
            running += array_started.get(job.array_job_id, 0)
        if running >= job.array_max_running:
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
    if state.nodes.unusable:
        # Too few of the partition's nodes can take work at all: it waits for the others to come
        # back (seen on Slurm 22.05: -N2 with one of two nodes drained).
        mask = state.partition_mask(job.partition)
        if job.num_nodes > int(np.count_nonzero(state.nodes.usable & mask)):
            out = np.flatnonzero(mask & ~state.nodes.usable)
            return Reason.unavailable_nodes(compress([state.nodes.names[i] for i in out]))
    return None


def required_nodes(job: Job, state: ClusterState) -> np.ndarray | None:
    """The ``-w`` nodes as sorted node indices, or None.  They are a floor, not a limit:
    the job gets all of them plus other allowed nodes up to its node count."""
    if not job.req_nodes:
        return None
    idx = state.nodes.index
    return np.array(sorted(idx[n] for n in job.req_nodes if n in idx), dtype=np.int64)


def node_filter(job: Job, state: ClusterState, now: float, base: np.ndarray,
                honour_reservations: bool = True) -> np.ndarray:
    """The nodes this job may be placed on now: its partition's usable nodes (``base``), minus
    ``-x``, limited to its GPU type, and minus advance reservations it may not use.

    ``-w`` does not narrow it (see :func:`required_nodes`; placement forces those nodes in).
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
