"""``sbatch --test-only``: when, where and on how many processors a job would start if it were
submitted now (slurmctld's will-run test).

As in Slurm, the test looks at the running jobs' time limits and at advance reservations, not at
the pending queue: the answer is the earliest start the cluster's resources allow, which a
busy queue may push back.  Pure: ``now`` is a parameter.
"""

from __future__ import annotations

from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched.backfill import promise_advance_reservations
from minislurm.sched.eligibility import blocked_reason, required_nodes
from minislurm.sched.plan import NEVER, Plan
from minislurm.sched.releases import Releases
from minislurm.sched.work import Pass
from minislurm.sched.select.cons_tres import request, request_key

# Reasons a job can never start however long it waits: will-run finds no place for it.
_NEVER = (Reason.PARTITION_CONFIG, Reason.PARTITION_NODE_LIMIT, Reason.PARTITION_TIME_LIMIT,
          Reason.PARTITION_DOWN, Reason.PARTITION_INACTIVE)


def will_run(state: ClusterState, job: Job, now: float) -> tuple[float, list[str], int] | None:
    """(start, node names, processors), or None when no start can be found."""
    work = Pass(state, now)
    if blocked_reason(job, state, now, work.deps) in _NEVER:
        return None
    req, required = request(job, state.nodes), required_nodes(job, state)
    alloc = work.free.place(job, req, work.free.fits(req) & work.allowed(job), required)
    if alloc is not None:
        return now, [state.nodes.names[n] for n in alloc.nodes], alloc.num_cpus
    plan = Plan(work.free, Releases().refresh(state), now)
    promise_advance_reservations(work, plan)
    ready = plan.ready_times(request_key(job), req).copy()
    ready[~work.allowed(job, honour_reservations=False)] = NEVER
    duration = plan.grid(job.time_limit) if job.time_limit != float("inf") else NEVER
    found = plan.earliest_start(ready, job.num_nodes, duration, required)
    if found is None:
        return None
    start, nodes = found
    return float(max(start, now)), [state.nodes.names[n] for n in nodes], job.num_nodes * job.shape.cpus
