"""Backfill's speed-ups: what lets a cycle pass over a job without changing any decision.

:mod:`~minislurm.sched.backfill` reads as the policy: each job in priority order starts now or
gets a promise.  On a deep queue that means asking the plan about thousands of jobs that can
do neither, so a cycle asks :class:`Shortcuts` first.  Every shortcut rests on one fact: in a
cycle, room only shrinks (each start and each promise takes some, none gives any back), so a
job that could not start now -- or found no start within ``bf_window`` -- rules out every
later job like it that asks as much or more, on as many nodes or more, for as long or longer.

* **memo** (always on): the jobs that found no start now (EASY) or none within the window,
  by shape, node count and duration;
* **decisions only** (``promise_all=False``, the simulator): the cycle ends once no node has
  room for even the smallest queued job, and :class:`~minislurm.sched.startnow.StartNow`
  answers "could it start now, could it get a promise" for a window of the queue at once and
  passes over the jobs that can do neither.  Their expected starts are left unknown.

``Shortcuts(enabled=False)`` turns all of them off: every job is searched, as the policy
reads; tests/sim/test_speedups.py replays real traces both ways and compares every decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from minislurm.core.job import Job
from minislurm.sched.plan import Plan
from minislurm.sched.startnow import StartNow

if TYPE_CHECKING:
    from minislurm.sched.order import Columns
    from minislurm.sched.work import Pass

DEEP = 64  # queued jobs beyond which a decisions-only cycle asks StartNow


class Shortcuts:
    def __init__(self, *, enabled: bool = True, decisions_only: bool = False,
                 floor: tuple[int, int, int] = (0, 0, 0), shortest: float = 0.0,
                 columns: "Columns | None" = None):
        """``decisions_only``: the caller needs no expected starts; ``floor``: the least any
        queued job asks of a node, and ``shortest`` the shortest time limit; ``columns``: the
        queue's, in the cycle's order."""
        self.enabled, self.decisions_only = enabled, enabled and decisions_only
        self.floor, self.shortest, self.columns = floor, shortest, columns
        self._start_now: StartNow | None = None
        self._no_start = _Failures()  # could not start now (EASY promises no job like them)
        self._no_promise = _Failures()  # found no start within the window

    def nothing_can_start(self, work: "Pass") -> bool:
        """A decisions-only cycle with no node open for any queued job ends before it begins."""
        return self.decisions_only and not work.free.open_now(work.state.nodes.usable, self.floor).any()

    def begin(self, work: "Pass", plan: Plan, queued: int, horizon: int) -> None:
        if self.enabled:
            plan.keep_one_node_starts()
        self._shortest = max(1, plan.grid(self.shortest))  # on the plan's grid, as durations are
        if self.decisions_only and self.columns is not None and queued > DEEP:  # a short queue: one by one
            self._start_now = StartNow(work, plan, self.columns, horizon)

    def pass_over(self, at: int, promise: bool, reached: int, promised: set[str]) -> tuple[int, int] | None:
        """None: test the job at queue position ``at``.  Else it can neither start now nor get
        a promise (``promise``: whether one may be given): where the cycle goes on, and how
        many more jobs that counts as tested (a run of jobs like it, past the main stage's
        ``reached``, is passed over with it)."""
        if self._start_now is None:
            return None
        now_ok, promise_ok = self._start_now(at, promised)
        if now_ok or (promise_ok and promise):
            return None
        if at + 1 >= reached:  # no job beyond has a reason or a start yet
            return self._start_now.pass_over(at + 1, promised)
        return at + 1, 0

    def shape(self, job: Job, allowed: np.ndarray, required) -> "_Shape | None":
        """What the memo knows the job by (None: not memoised, as a ``-w`` job)."""
        return _Shape(job, allowed) if self.enabled and required is None else None

    def cannot_start(self, shape, nodes: int, duration: int) -> bool:
        return self._no_start.covers(shape, nodes, duration)

    def cannot_promise(self, shape, nodes: int, duration: int) -> bool:
        return self._no_promise.covers(shape, nodes, duration)

    def found_no_promise(self, shape, nodes: int, duration: int) -> None:
        self._no_promise.add(shape, nodes, duration)

    def found_no_start(self, at: int, shape, nodes: int, duration: int, by: int, easy: bool) -> None:
        """The job at ``at`` cannot start before ``by`` (now, or beyond the window)."""
        if easy:
            self._no_start.add(shape, nodes, duration)
        if self._start_now is not None:
            self._start_now.no_start_by(at, nodes, duration, by)

    def done(self, work: "Pass", plan: Plan) -> bool:
        """A decisions-only cycle ends once no node has room now for the smallest queued job,
        for as long as the shortest one would run."""
        return self.decisions_only and not plan.room_now(work.state.nodes.usable, self.floor, self._shortest)


class _Shape:
    """What decides whether a job can start now, besides its node count and duration: the
    nodes it may use, and per node the CPUs, memory and GPUs (of a type) it asks for.
    ``group`` is what must be equal for one shape to ask for more than another."""

    __slots__ = ("group", "amounts")

    def __init__(self, job: Job, allowed: np.ndarray):
        s = job.shape
        self.group = (allowed.tobytes(), s.gpu_type, job.exclusive, s.mem == -1)
        self.amounts = (s.cpus, 0 if s.mem == -1 else s.mem, s.gpus)


class _Failures:
    """Jobs that found no start (now, or within the window) in this cycle: per shape group,
    their amounts, node count and duration.  A job asking at least as much as one of them, on
    as many nodes or more, for as long or longer, finds none either."""

    def __init__(self) -> None:
        self._seen: dict[tuple, list[tuple[int, int, int, int, int]]] = {}

    def covers(self, shape: _Shape | None, nodes: int, duration: int) -> bool:
        """A job of ``shape`` wanting ``nodes`` nodes for ``duration`` finds none either."""
        if shape is None:
            return False
        cpus, mem, gpus = shape.amounts
        for c, m, g, n, d in self._seen.get(shape.group, ()):  # (a plain loop: asked for most jobs tested)
            if c <= cpus and m <= mem and g <= gpus and n <= nodes and d <= duration:
                return True
        return False

    def add(self, shape: _Shape | None, nodes: int, duration: int) -> None:
        if shape is None or self.covers(shape, nodes, duration):
            return
        cpus, mem, gpus = shape.amounts
        group = self._seen.setdefault(shape.group, [])
        # Those it covers are dropped: it says all they said.
        group[:] = [(c, m, g, n, d) for c, m, g, n, d in group
                    if not (cpus <= c and mem <= m and gpus <= g and nodes <= n and duration <= d)]
        group.append((cpus, mem, gpus, nodes, duration))
