"""sched/backfill: start lower-priority jobs early when that delays no higher-priority job.

Conservative, as Slurm is: jobs are taken in priority order (up to ``bf_max_job_test`` of
them); each that can start now without touching an earlier promise starts ("backfilled"),
and each that cannot gets a promise (a reservation of whole nodes from its earliest
possible start for its whole time limit) when that start lies within ``bf_window``.
A later job can therefore never push back the planned start of an earlier one.

A ``-w`` job is planned exactly: its promise holds all its listed nodes plus other nodes up
to its node count, from the first time they are all free together.  A throttled array task
(``%N``) neither starts nor gets a promise, and the throttle counts the tasks started earlier
in the same pass.

EASY (``easy=True``) promises only to the first blocked job of each partition, so later
jobs may start in front of every other waiting job.  It is not a Slurm option; it is here
so lessons and replays can compare the two.

:func:`run` is the policy, to be read on its own; what lets a cycle on a deep queue pass
over jobs that can neither start nor get a promise is asked of :mod:`.shortcuts`, and
changes no decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from minislurm.core.job import Job
from minislurm.core.states import Reason
from minislurm.sched.eligibility import required_nodes
from minislurm.sched.plan import NEVER, Plan
from minislurm.sched.releases import Releases
from minislurm.sched.select.cons_tres import request, request_key
from minislurm.sched.shortcuts import Shortcuts

if TYPE_CHECKING:
    from minislurm.sched.work import Pass


def run(work: "Pass", order: list[Job], easy: bool = False, releases: Releases | None = None,
        shortcuts: Shortcuts | None = None) -> tuple[dict[int, float], dict[int, tuple[int, ...]]]:
    """Test jobs in ``order``; start or promise.  Returns the promises: each job's expected
    start and planned nodes.  ``releases``: the caller's table of the running jobs' releases,
    kept between cycles; ``shortcuts``: what lets the cycle pass over jobs that can neither
    start nor get a promise (:mod:`~minislurm.sched.shortcuts`; none by default)."""
    state, now = work.state, work.now
    cfg = state.config.sched
    shortcuts = shortcuts or Shortcuts(enabled=False)
    if shortcuts.nothing_can_start(work):
        return {}, {}
    plan = Plan(work.free, (releases or Releases()).refresh(state), now)
    for s in work.starts:  # the main stage's
        plan.add_running(_Running(work.started[s.job_id], s.alloc, now))
    promise_advance_reservations(work, plan)
    horizon = plan.now + int(cfg.bf_window)
    shortcuts.begin(work, plan, len(order) - len(work.started), horizon)
    expected: dict[int, float] = {}
    planned: dict[int, tuple[int, ...]] = {}
    promised_parts: set[str] = set()  # EASY: the partitions whose first blocked job has its promise
    tested = at = 0
    while at < len(order):
        job = order[at]
        at += 1
        if not _to_test(work, job):
            continue
        if tested >= cfg.bf_max_job_test:
            break
        tested += 1
        work.tested = tested
        may_promise = not (easy and job.partition in promised_parts)
        jump = shortcuts.pass_over(at - 1, may_promise, work.reached, promised_parts if easy else set())
        if jump is not None:
            at, passed = jump
            tested += passed
            work.tested = tested
            continue
        required = required_nodes(job, state)
        allowed = work.allowed(job, honour_reservations=False)
        duration = plan.grid(job.time_limit) if job.time_limit != float("inf") else NEVER
        shape = shortcuts.shape(job, allowed, required)
        if not may_promise and shortcuts.cannot_start(shape, job.num_nodes, duration):
            work.reason.setdefault(job.job_id, Reason.PRIORITY)  # no start now, and no promise under EASY
            shortcuts.found_no_start(at - 1, shape, job.num_nodes, duration, plan.now, easy)
            if shortcuts.done(work, plan):
                break
            continue
        # The earliest start on the plan: now or never when no promise may be given.
        now_or_never = not may_promise and required is None
        if not now_or_never and shortcuts.cannot_promise(shape, job.num_nodes, duration):
            found = None  # a job like it, as small and as short, found no start within the window
        else:
            req = request(job, state.nodes)
            if now_or_never:  # only the nodes with its request free now matter
                nodes = plan.start_now(allowed & work.free.fits(req), job.num_nodes, duration)
                found = None if nodes is None else (plan.now, nodes)
            else:
                ready = plan.ready_on(request_key(job), req, allowed)
                found = plan.earliest_start(ready, job.num_nodes, duration, required)
                if found is None or found[0] > horizon:
                    shortcuts.found_no_promise(shape, job.num_nodes, duration)
        # It may start now: backfilled, on the nodes the plan found.
        if found is not None and found[0] <= plan.now:
            chosen = np.zeros(len(state.nodes), dtype=bool)
            chosen[found[1]] = True
            alloc = work.free.place(job, req, chosen & work.free.fits(req) & work.allowed(job), required)
            if alloc is not None:
                work.start(job, alloc, backfilled=True)
                plan.add_running(_Running(job, alloc, plan.now))
                continue
        if found is None or found[0] > plan.now:  # the plan says no (not a placement's refusal)
            beyond = not now_or_never and (found is None or found[0] > horizon)
            if beyond or easy:  # "not now" alone rules out no later job, unless EASY promises it nothing
                shortcuts.found_no_start(at - 1, shape, job.num_nodes, duration,
                                         horizon if beyond else plan.now, easy)
        if work.reason.get(job.job_id, Reason.PRIORITY) == Reason.PRIORITY and work.reserved_for_other(job, required):
            work.reason[job.job_id] = Reason.RESERVED_FOR_OTHER
        work.reason.setdefault(job.job_id, Reason.PRIORITY)
        # Its promise: whole nodes from its earliest start for its whole time limit.  None
        # beyond the window (Slurm logs "No reservation created"), and under EASY none after
        # the partition's first.
        if found is not None and found[0] <= horizon and may_promise:
            start, nodes = found
            plan.reserve(nodes, start, min(start + duration, NEVER))
            promised_parts.add(job.partition)
            expected[job.job_id] = float(max(start, now))
            planned[job.job_id] = tuple(nodes.tolist())
        if shortcuts.done(work, plan):
            break
    return expected, planned


def _to_test(work: "Pass", job: Job) -> bool:
    """Whether backfill tests the job: not started, and waiting only for room (what the main
    stage did not reach gets its reason here).  A job of an advance reservation runs only
    inside it, and a heterogeneous job's components start together, both placed by the main
    stage."""
    if job.job_id in work.started:
        return False
    why = work.reason.get(job.job_id)
    if why is None:  # the main stage never reached it
        why = work.blocked(job)
        if why is not None:
            work.reason[job.job_id] = why
            return False
    elif why not in (Reason.RESOURCES, Reason.PRIORITY, Reason.RESERVED_FOR_OTHER):
        return False
    elif job.array_max_running is not None and work.blocked(job) == Reason.ARRAY_TASK_LIMIT:
        work.reason[job.job_id] = Reason.ARRAY_TASK_LIMIT  # a task started earlier in this cycle
        return False
    return job.reservation is None and job.het_job_id is None  # (see .hetjob: main stage only)


class _Running:
    """The few fields of a job started in this cycle that the plan needs."""

    __slots__ = ("start_time", "time_limit", "alloc")

    def __init__(self, job: Job, alloc, now: float):
        self.start_time, self.time_limit, self.alloc = now, job.time_limit, alloc


def promise_advance_reservations(work: "Pass", plan: Plan) -> None:
    """Advance reservations are promises too, for every job outside them."""
    idx = work.state.nodes.index
    for resv in work.state.reservations.values():
        if resv.end <= work.now:
            continue
        nodes = [idx[n] for n in resv.nodes if n in idx]
        plan.reserve(nodes, max(plan.now, int(resv.start)), plan.grid(resv.end))
