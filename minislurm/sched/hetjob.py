"""Heterogeneous jobs: components that start together or not at all.

A heterogeneous job (``#SBATCH hetjob`` between option groups, ``sbatch A : B``) is one job
record per component, ids ``leader``, ``leader+1``, ... (squeue shows ``leader+offset``).  Each
component has its own shape and may land on the same nodes as another.  The rule that binds
them is the start: as Slurm 22.05's main scheduler does, the whole job is tested when the
first of its components is reached in priority order, every component is placed on what is
still free, one after the other and never on a node an earlier component took (Slurm 22.05
gives no two components of one job the same node: three one-CPU components never start on two
nodes), and either all of them start in this pass or none does (each then waits with the same
reason).

Simplified: backfill neither starts nor plans a heterogeneous job (Slurm's plans the
components to a common start); it starts in the main stage once all its components fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from minislurm.core.job import Allocation, Job
from minislurm.sched.eligibility import required_nodes
from minislurm.sched.select.cons_tres import request

if TYPE_CHECKING:
    from minislurm.sched.work import Pass


def blocked(work: "Pass", parts: list[Job]) -> str | None:
    """The first reason a component may not start yet (a hold, a dependency, a begin time)."""
    for c in parts:
        if (why := work.blocked(c)) is not None:
            return why
    return None


def place_together(work: "Pass", parts: list[Job], withheld=None) -> list[tuple[Job, Allocation]] | None:
    """Each component placed on nodes that no earlier one took, or None if one does not fit
    (nothing is taken then)."""
    taken = np.zeros(len(work.state.nodes), dtype=bool) if withheld is None else withheld.copy()
    placed = []
    for c in parts:
        req = request(c, work.state.nodes)
        alloc = work.free.place(c, req, work.free.fits(req) & work.allowed(c) & ~taken, required_nodes(c, work.state))
        if alloc is None:
            return None
        taken[list(alloc.nodes)] = True
        placed.append((c, alloc))
    return placed
