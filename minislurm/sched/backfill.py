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
from minislurm.sched.startnow import StartNow

if TYPE_CHECKING:
    from minislurm.sched.order import Columns
    from minislurm.sched.work import Pass

DEEP = 64  # queued jobs beyond which a cycle asks StartNow


def run(work: "Pass", order: list[Job], easy: bool = False, promise_all: bool = True,
        floor: tuple[int, int, int] = (0, 0, 0),
        columns: "Columns | None" = None,
        releases: Releases | None = None) -> tuple[dict[int, float], dict[int, tuple[int, ...]]]:
    """Test jobs in ``order``; start or promise.  With ``promise_all=False`` the cycle ends as
    soon as no job at all could start now (no node open now has ``floor``, the least any
    queued job asks of a node, free): the decisions are the same, only the remaining jobs'
    expected starts are left unknown (the simulator needs no ``squeue --start``): a cycle with
    no such node at all ends before it begins, and ``columns`` (the queue's, in ``order``) lets
    a cycle pass over the jobs that can neither start nor get a promise without asking the
    plan about each (:mod:`~minislurm.sched.startnow`).  No reason is recorded for them.
    ``releases``: the caller's table of the running jobs' releases, kept between cycles.

    What makes a cycle cheap on a deep queue: in one cycle a job can only find it harder to
    start now than the jobs before it did (each start and each promise takes room, none gives
    any back), so once a job of some shape could not start now, a later job of the same
    request and nodes that wants as many nodes or more, for as long or longer, cannot either.
    Under EASY, where such a job gets no promise either, it is not planned at all.  Likewise a
    job like one that found no start within ``bf_window`` (no smaller, no shorter) is not
    searched for: it can neither start now nor get a promise.
    """
    state, now = work.state, work.now
    cfg = state.config.sched
    if not promise_all and not work.free.open_now(state.nodes.usable, floor).any():
        return {}, {}
    plan = Plan(work.free, (releases or Releases()).refresh(state), now)
    for s in work.starts:  # the main stage's
        plan.add_running(_Running(work.started[s.job_id], s.alloc, now))
    promise_advance_reservations(work, plan)
    horizon = plan.now + int(cfg.bf_window)
    expected: dict[int, float] = {}
    planned: dict[int, tuple[int, ...]] = {}
    promised_parts: set[str] = set()
    cannot_start = _Failures()  # could not start now (EASY skips their like once promised)
    cannot_promise = _Failures()  # could neither start nor get a promise (no start within the window)
    deep = columns is not None and len(order) - len(work.started) > DEEP  # a short queue is cheaper one by one
    start_now = StartNow(work, plan, columns, horizon) if not promise_all and deep else None
    tested = at = 0
    while at < len(order):
        job = order[at]
        at += 1
        if job.job_id in work.started:
            continue
        why = work.reason.get(job.job_id)
        if why is None:  # the main stage never reached it
            why = work.blocked(job)
            if why is not None:
                work.reason[job.job_id] = why
                continue
        elif why not in (Reason.RESOURCES, Reason.PRIORITY, Reason.RESERVED_FOR_OTHER):
            continue
        elif job.array_max_running is not None and work.blocked(job) == Reason.ARRAY_TASK_LIMIT:
            work.reason[job.job_id] = Reason.ARRAY_TASK_LIMIT  # a task started earlier in this cycle
            continue
        if job.reservation is not None:
            continue  # runs only inside its reservation, placed by the main stage
        if tested >= cfg.bf_max_job_test:
            break
        tested += 1
        if start_now is not None:
            now_ok, promise_ok = start_now(at - 1)
            if not now_ok and (not promise_ok or (easy and job.partition in promised_parts)):
                if at >= work.reached:  # no job beyond has a reason or a start yet
                    at, passed = start_now.pass_over(at, promised_parts if easy else set())
                    tested += passed
                continue  # it neither starts now nor gets a promise
        required = required_nodes(job, state)
        allowed = work.allowed(job, honour_reservations=False)
        duration = plan.grid(job.time_limit) if job.time_limit != float("inf") else NEVER
        shape = _Shape(job, allowed) if required is None else None
        if easy and job.partition in promised_parts and cannot_start.covers(shape, job.num_nodes, duration):
            work.reason.setdefault(job.job_id, Reason.PRIORITY)  # no start now, and no promise under EASY
            if start_now is not None:
                start_now.no_start_by(at - 1, job.num_nodes, duration, plan.now)
            if not promise_all and not plan.room_now(state.nodes.usable, floor):
                break
            continue
        now_or_never = easy and job.partition in promised_parts and required is None  # no promise
        if not now_or_never and cannot_promise.covers(shape, job.num_nodes, duration):
            found = None  # a job like it, as small and as short, found no start within the window
        else:
            req = request(job, state.nodes)
            ready = np.where(allowed, plan.ready_times(request_key(job), req), NEVER)
            if now_or_never:
                nodes = plan.start_now(ready, job.num_nodes, duration)
                found = None if nodes is None else (plan.now, nodes)
            else:
                found = plan.earliest_start(ready, job.num_nodes, duration, required)
                if found is None or found[0] > horizon:
                    cannot_promise.add(shape, job.num_nodes, duration)
        if found is not None and found[0] <= plan.now and _fits_reservation(work, job, now):
            chosen = np.zeros(len(ready), dtype=bool)
            chosen[found[1]] = True
            alloc = work.free.place(job, req, chosen & work.free.fits(req) & work.allowed(job), required)
            if alloc is not None:
                work.start(job, alloc, backfilled=True)
                plan.add_running(_Running(job, alloc, plan.now))
                continue
        if found is None or found[0] > plan.now:  # the plan says no (not a placement's refusal)
            if easy:
                cannot_start.add(shape, job.num_nodes, duration)
            beyond = not now_or_never and (found is None or found[0] > horizon)
            if start_now is not None and (beyond or easy):  # "not now" alone passes nothing over unless EASY
                start_now.no_start_by(at - 1, job.num_nodes, duration, horizon if beyond else plan.now)
        if work.reason.get(job.job_id, Reason.PRIORITY) == Reason.PRIORITY and work.reserved_for_other(job, required):
            work.reason[job.job_id] = Reason.RESERVED_FOR_OTHER
        work.reason.setdefault(job.job_id, Reason.PRIORITY)
        # No promise beyond the window (Slurm logs "No reservation created"), and under
        # EASY none after the partition's first.
        if found is not None and found[0] <= horizon and not (easy and job.partition in promised_parts):
            start, nodes = found
            plan.reserve(nodes, start, min(start + duration, NEVER))
            promised_parts.add(job.partition)
            expected[job.job_id] = float(max(start, now))
            planned[job.job_id] = tuple(nodes.tolist())
        if not promise_all and not plan.room_now(state.nodes.usable, floor):
            break
    return expected, planned


class _Shape:
    """What decides whether a job can start now, besides its node count and duration: the
    nodes it may use, and per node the CPUs, memory and GPUs (of a type) it asks for."""

    __slots__ = ("nodes", "kind", "amounts")

    def __init__(self, job: Job, allowed: np.ndarray):
        s = job.shape
        self.nodes, self.kind = allowed.tobytes(), (s.gpu_type, job.exclusive, s.mem == -1)
        self.amounts = (s.cpus, 0 if s.mem == -1 else s.mem, s.gpus)

    def at_least(self, other: "_Shape") -> bool:
        """This shape asks, on the same nodes, for everything ``other`` asks and more."""
        return (self.nodes == other.nodes and self.kind == other.kind
                and all(a >= b for a, b in zip(self.amounts, other.amounts)))


class _Failures:
    """The jobs that could not start now in this cycle, by (shape, node count, duration)."""

    def __init__(self) -> None:
        self._seen: dict[tuple, list[tuple[_Shape, int, int]]] = {}

    def covers(self, shape: _Shape | None, nodes: int, duration: int) -> bool:
        """A job of ``shape`` wanting ``nodes`` nodes for ``duration`` cannot start now either."""
        return shape is not None and any(
            n <= nodes and d <= duration and shape.at_least(other)
            for other, n, d in self._seen.get((shape.nodes, shape.kind), ()))

    def add(self, shape: _Shape | None, nodes: int, duration: int) -> None:
        if shape is None or self.covers(shape, nodes, duration):
            return
        group = self._seen.setdefault((shape.nodes, shape.kind), [])
        group[:] = [(o, n, d) for o, n, d in group if not (nodes <= n and duration <= d and o.at_least(shape))]
        group.append((shape, nodes, duration))
class _Running:
    """The few fields of a job started in this cycle that the plan needs."""

    __slots__ = ("start_time", "time_limit", "alloc")

    def __init__(self, job: Job, alloc, now: float):
        self.start_time, self.time_limit, self.alloc = now, job.time_limit, alloc


def _fits_reservation(work: "Pass", job: Job, now: float) -> bool:
    resv = work.state.reservations.get(job.reservation) if job.reservation else None
    return resv is None or now + job.time_limit <= resv.end


def promise_advance_reservations(work: "Pass", plan: Plan) -> None:
    """Advance reservations are promises too, for every job outside them."""
    idx = work.state.nodes.index
    for resv in work.state.reservations.values():
        if resv.end <= work.now:
            continue
        nodes = [idx[n] for n in resv.nodes if n in idx]
        plan.reserve(nodes, max(plan.now, int(resv.start)), plan.grid(resv.end))
