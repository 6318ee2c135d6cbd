"""Which queued jobs could still start now, or get a promise: asked of the whole queue at once.

With ``promise_all=False`` (the simulator) a backfill cycle only needs to know, of each job,
whether it starts now or gets a promise, since only those change what the cycle decides.
In a deep queue most jobs do neither, and asking the plan about each in turn is what made
overloaded replays slow.  Two answers for all the jobs of a group (same request, same nodes)
in one sorted search each:

* could it start now: at least ``k`` of the nodes it may use have its request free now and
  no promise on them before ``now`` plus its time limit (the test of
  :meth:`~minislurm.sched.plan.Plan.start_now`), exact;
* could it get a promise: not if even the ``k``-th earliest time its nodes have its request
  free with no promise on them (at that moment: a promise still has to fit its whole time
  limit, which only pushes the start later) lies beyond ``bf_window``.

Within a cycle both can only turn from yes to no (each start and each promise takes room,
none gives any back), so a job found unable once is unable for the rest of the cycle and
backfill may pass it over; a job found able is still tested as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from minislurm.sched.plan import NEVER, Plan
from minislurm.sched.select.cons_tres import request, request_key

if TYPE_CHECKING:
    from minislurm.sched.order import Columns
    from minislurm.sched.work import Pass


def window_for(budget: int) -> int:
    """How many jobs of the queue one answer covers: as many as a cycle tests at most
    (``bf_max_job_test``), and a quarter more for those it passes without a test (held, not yet
    begun...), so that a cycle asks one window as a rule.  (Windows of 256 or 384 jobs, and of
    1,024, cost the philly160 EASY replay 15-40 % more: two windows a cycle, or one full of jobs
    no cycle reaches.)"""
    return max(64, budget + budget // 4)


class StartNow:
    """``start_now(at)``: (could the job at position ``at`` of the queue start now, could it
    get a promise); both True for a job tested one by one.

    Answers are worked out for a window of the queue at a time, on the plan as it is then.
    A "no" holds for the rest of the cycle; so does each "no" backfill finds by testing a job
    (:meth:`no_start_by`), for every job of the window like it.  A "yes" may go stale as the
    cycle makes starts and promises, and is not worked out again: it only means the job is
    tested one by one, which decides exactly.  (Most stale answers stay "yes": working the
    window out again after every promise cost more than it saved.)  What only starts change
    (when each group's request is free on each node) is kept until the next start."""

    def __init__(self, work: "Pass", plan: Plan, columns: "Columns", horizon: int):
        self.work, self.plan, self.columns, self.horizon = work, plan, columns, horizon
        self.window = window_for(work.state.config.sched.bf_max_job_test)
        self._first = self._end = 0  # the window of the queue looked at: [first, end)
        self._failed: dict[int, list[tuple[int, int, int]]] = {}  # group -> (nodes, duration, by)
        self._ready_rows_of: dict[int, np.ndarray] = {}  # per group, as of _rows_version
        self._open_rows_of: dict[int, np.ndarray] = {}  # per group, as of _rows_version
        self._rows_version = -1

    def __call__(self, at: int, promised: set[str] = frozenset()) -> tuple[bool, bool]:
        """``promised``: the partitions whose jobs get no promise (EASY's, once each has one)."""
        if not self._first <= at < self._end:
            self._look_at(at, promises_left=not promised >= self.work.state.partitions.keys())
        i = at - self._first
        return bool(self._now[i]), bool(self._soon[i])

    def pass_over(self, at: int, promised: set[str]) -> tuple[int, int]:
        """From position ``at`` on, the plain jobs that, by the answers kept, neither start now
        nor get a promise (none under EASY in a ``promised`` partition): backfill may pass over
        them in one step.  Returns the position of the first job it must look at, and how many
        of those passed over it would have counted as tested (those whose begin time is past)."""
        soon = self._soon
        if promised:
            members = self.columns.members
            no_promise = np.array([g >= 0 and members[g].partition in promised for g in self._groups])
            soon = soon & ~no_promise[self._row]
        i = at - self._first
        look = (~self._plain[i:]) | self._now[i:] | soon[i:]
        first = int(look.argmax()) if len(look) else 0  # the first True: argmax stops at it
        stop = i + first if len(look) and look[first] else self._end - self._first
        return self._first + stop, int(np.count_nonzero(self._begun[i:stop]))

    def no_start_by(self, at: int, nodes: int, duration: int, by: int) -> None:
        """Backfill found that the job at position ``at`` (``nodes`` nodes for ``duration``
        seconds) cannot start by ``by`` (now, or the window's end): nor can any job of its group
        that wants as many nodes or more for as long or longer, for the rest of the cycle."""
        group = self.columns.group_at(at)
        if group >= 0:
            self._failed.setdefault(group, []).append((nodes, duration, by))
            self._rule_out(group, nodes, duration, by)

    def _rule_out(self, group: int, nodes: int, duration: int, by: int) -> None:
        """Turn to "no" the answers of the jobs of the window that ``no_start_by`` covers."""
        like = (self._group == group) & (self._count >= nodes) & (self._durations >= duration)
        self._now &= ~like
        if by >= self.horizon:
            self._soon &= ~like

    def _look_at(self, first: int, promises_left: bool = True) -> None:
        """Take the window of the queue from ``first`` and answer for it (``promises_left``:
        whether any job may still get a promise in this cycle; if not, none is asked about)."""
        plan = self.plan
        end = min(first + self.window, len(self.columns))
        cols = self.columns.window(first, end)
        group = cols["group"]
        self._tested = group < 0  # tested one by one
        present = np.bincount(group + 1) > 0  # the groups in the window (-1: the tested jobs)
        if len(present) > 1:
            present[0] = False  # (-1 alone: a row of NEVER, for the tested jobs)
        groups = present.nonzero()[0] - 1
        self._row = np.maximum(present.cumsum() - 1, 0)[group + 1]  # a tested job reads any row: its answer is yes
        self._first, self._end, self._groups, self._group = first, end, groups, group
        self._count, self._plain = cols["nodes"], cols["plain"]
        self._durations = plan.grid_all(cols["limit"])
        self._ends = np.minimum(plan.now + self._durations, NEVER)
        self._begun = cols["begin"] <= self.work.now
        # "Now" needs only where each group's request is free now; a promise, when each is.
        self._ready = np.array(self._ready_rows(groups)) if promises_left else None
        self._open = self._ready <= plan.now if promises_left else np.array(self._open_rows(groups))
        self._answer(promises_left)
        for number in set(groups.tolist()) & self._failed.keys():  # what backfill found this cycle
            for failure in self._failed[number]:
                self._rule_out(number, *failure)

    def _answer(self, promises_left: bool) -> None:
        """Both answers for the window, on the plan as it is now."""
        plan, width, row, count, ready = self.plan, len(self.work.state.nodes), self._row, self._count, self._ready
        # Now: enough nodes free now, and no promise on them before the job would end.  Each
        # row's times sorted, and all rows searched at once (row r's times shifted by r << 41).
        if not len(plan.promises):  # (the cycle's first window, as a rule: only the nodes free now count)
            now = self._open.sum(axis=1)[row] >= count
        else:
            open_until = np.where(self._open, plan.promises.free_until(plan.now, width) + 1, 0)
            shifted = np.sort(open_until, axis=1) + (np.arange(len(open_until))[:, None] << 41)
            before = shifted.ravel().searchsorted((row << 41) + self._ends + 1) - row * width
            now = width - before >= count
        # A promise: not if the k-th node to be free at a time no promise covers is past the window.
        if ready is not None:
            soonest = np.sort(plan.promises.first_unpromised(ready), axis=1)
            soon = (soonest[row, np.minimum(count, width) - 1] <= self.horizon) & (count <= width)
        else:
            soon = np.zeros(len(row), dtype=bool)
        self._now = now | self._tested
        self._soon = soon | self._tested

    def _open_rows(self, numbers: np.ndarray) -> list[np.ndarray]:
        """Per group in ``numbers`` and node, whether the group's request is free there now and
        it may run there (the nodes whose ready time is now, found without the ready times)."""
        work = self.work
        self._drop_rows_after_a_start()
        kept = self._open_rows_of
        for number in numbers.tolist():
            if number not in kept:
                job = self.columns.members[number] if number >= 0 else None
                kept[number] = np.zeros(len(work.state.nodes), dtype=bool) if job is None else (
                    work.free.fits(request(job, work.state.nodes)) & work.allowed(job, honour_reservations=False))
        return [kept[n] for n in numbers.tolist()]

    def _drop_rows_after_a_start(self) -> None:
        """What each group's rows say changes only with a start (free resources, releases)."""
        if self._rows_version != self.plan.releases_version:
            self._ready_rows_of, self._open_rows_of = {}, {}
            self._rows_version = self.plan.releases_version

    def _ready_rows(self, numbers: np.ndarray) -> list[np.ndarray]:
        """Per group in ``numbers`` and node, when the group's request is free there (NEVER
        where it may not run)."""
        plan, nodes = self.plan, self.work.state.nodes
        self._drop_rows_after_a_start()
        kept = self._ready_rows_of
        todo = [int(n) for n in numbers if n not in kept]
        jobs = {n: self.columns.members[n] for n in todo if n >= 0}
        plan.ready_times_many([(request_key(job), request(job, nodes)) for job in jobs.values()])
        for number in todo:
            job = jobs.get(number)
            kept[number] = np.full(len(nodes), NEVER, dtype=np.int64) if job is None else np.where(
                self.work.allowed(job, honour_reservations=False),
                plan.ready_times(request_key(job), request(job, nodes)), NEVER)
        return [kept[int(n)] for n in numbers]
