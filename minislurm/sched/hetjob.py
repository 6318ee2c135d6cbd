"""Heterogeneous jobs: components that start together or not at all.

A heterogeneous job (``#SBATCH hetjob`` between option groups, ``sbatch A : B``) is one job
record per component, ids ``leader``, ``leader+1``, ... (squeue shows ``leader+offset``).  Each
component has its own shape and may land on the same nodes as another.  The rule that binds
them is the start: as Slurm 22.05's main scheduler does, the whole job is tested when the
first of its components is reached in priority order, every component is placed on what is
still free, one after the other, and either all of them start in this pass or none does (each
then waits with the reason of the component that did not fit).

Simplified: backfill neither starts nor plans a heterogeneous job (Slurm's plans the
components to a common start); it starts in the main stage once all its components fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minislurm.core.job import Allocation, Job
from minislurm.core.state import ClusterState
from minislurm.sched.eligibility import required_nodes
from minislurm.sched.select.cons_tres import request

if TYPE_CHECKING:
    from minislurm.sched.work import Pass


def components(job: Job, state: ClusterState) -> list[Job]:
    """Every component of ``job``'s heterogeneous job, the leader first."""
    leader, out = job.het_job_id, []
    while (c := state.jobs.get(leader + len(out))) is not None and c.het_job_id == leader:
        out.append(c)
    return out


def blocked(work: "Pass", parts: list[Job]) -> str | None:
    """The first reason a component may not start yet (a hold, a dependency, a begin time)."""
    for c in parts:
        if (why := work.blocked(c)) is not None:
            return why
    return None


def place_together(work: "Pass", parts: list[Job], withheld=None) -> list[tuple[Job, Allocation]] | None:
    """Each component placed on what the previous ones left free, or None if one does not fit
    (nothing is taken then)."""
    trial = work.free.copy()
    placed = []
    for c in parts:
        req = request(c, work.state.nodes)
        candidates = trial.fits(req) & work.allowed(c)
        if withheld is not None:
            candidates &= ~withheld
        alloc = trial.place(c, req, candidates, required_nodes(c, work.state))
        if alloc is None:
            return None
        trial.take(alloc)
        placed.append((c, alloc))
    return placed
