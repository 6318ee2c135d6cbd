"""The order a pass walks the queue in (Slurm's evaluation order): jobs in an advance
reservation first, then higher PriorityTier, higher priority, earlier submit time, lower id.

Sorting a long queue on every pass costs more than the pass itself, so a caller that runs many
passes (the controller, the simulator) keeps a :class:`QueueOrder`: it remembers the sorted
queue between passes, inserts new jobs in place, and sorts again only when
:meth:`ClusterState.reprioritized` says the order may have changed.  The memory is the
caller's; the state is only read.
"""

from __future__ import annotations

import array
import bisect
import math

import numpy as np

from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.sched.eligibility import blocked_reason
from minislurm.sched.select.cons_tres import request_key


def sort_key(state: ClusterState):
    tiers = {name: p.priority_tier for name, p in state.partitions.items()}

    def key(j: Job):
        return (j.reservation is None, -tiers.get(j.partition, 0), -j.priority, j.submit_time,
                j.job_id if j.job_id >= 0 else j.order_id)  # inline: the plain job's is cheaper

    return key


class QueueOrder:
    """The sorted queue kept from one pass to the next (see the module's docstring).

    It reads which jobs joined or left the queue from the state's ``journal``, so a
    pass does not compare the whole queue.  It also keeps :attr:`floor`, the least CPUs,
    memory and GPUs per node that any job it has held since the last sort asks for: no node
    with less than that free can start any of them (backfill stops there).  A job that leaves
    never raises it, so it stays a safe bound; :attr:`shortest`, the shortest time limit of
    those jobs, is one in the same way.  And it keeps :attr:`columns`, the few fields
    backfill asks of every queued job, in the queue's order (:class:`Columns`)."""

    def __init__(self) -> None:
        self._epoch: int | None = None
        self._sorted: list[Job] = []
        self._keys: list[tuple] = []  # each one's sort key, in the same order (bisect compares them alone)
        self._key_of: dict[int, tuple] = {}  # job id -> its sort key
        self._read = 0  # how much of the state's queue journal has been read
        self.floor: tuple[int, int, int] = (0, 0, 0)
        self.shortest = 0.0
        self.columns = Columns([], None)

    def __call__(self, state: ClusterState) -> list[Job]:
        """The pending jobs in evaluation order (a list of the caller's own)."""
        return list(self.kept(state))

    def kept(self, state: ClusterState) -> list[Job]:
        """:meth:`__call__` without the copy: the kept list itself, to be read, not changed,
        and only until the next call (a pass reads it once)."""
        pending = state.pending
        key = sort_key(state)
        if self._epoch != state.order_epoch or self._read < state.journal_start:
            self._epoch = state.order_epoch
            self._key_of = {job_id: key(job) for job_id, job in pending.items()}
            self._sorted = sorted(pending.values(), key=lambda job: self._key_of[job.job_id])
            self._keys = [self._key_of[job.job_id] for job in self._sorted]
            self._read = state.journal_start + len(state.journal)
            self.floor = smallest_request(self._sorted)
            self.shortest = min((job.time_limit for job in self._sorted), default=math.inf)
            self.columns = Columns(self._sorted, state)
            return self._sorted
        changed = state.journal[self._read - state.journal_start:]
        self._read += len(changed)
        new = []
        for job_id in dict.fromkeys(changed):
            if job_id in pending and job_id not in self._key_of:
                job_key = self._key_of[job_id] = key(pending[job_id])
                at = bisect.bisect_left(self._keys, job_key)
                self._keys.insert(at, job_key)
                self._sorted.insert(at, pending[job_id])
                self.columns.insert(at, pending[job_id], state)
                new.append(pending[job_id])
            elif job_id in self._key_of and job_id not in pending:
                self._remove(job_id)
        if new:
            self.floor = smallest_request(new, self.floor)
            self.shortest = min(self.shortest, *(job.time_limit for job in new))
        return self._sorted

    def _remove(self, job_id: int) -> None:
        """Take a job that left the queue out of the sorted list: found by the key it was
        sorted by (keys are unique: the job id is the last part)."""
        at = bisect.bisect_left(self._keys, self._key_of.pop(job_id))
        del self._sorted[at], self._keys[at]
        self.columns.delete(at)


class Columns:
    """Per queued job, in the queue's order: its node count, its time limit, its group (a
    number shared by the jobs that make the same request of a node and may use the same
    nodes; -1 for a ``-w`` job or one in a reservation, which are always tested one by one),
    its begin time, and whether it is *plain*: it waits for nothing but its begin time and
    resources (no hold, dependency, array throttle, ``-w`` or reservation, and its partition
    takes it).  :class:`~minislurm.sched.startnow.StartNow` asks a window of the queue at once
    with them.  Kept as typed arrays of the standard library, which take a job in or out for
    far less than numpy's would and give a window to numpy as it is; a change to a queued job
    or a partition re-sorts the queue (``reprioritized``), which builds them again."""

    NAMES = ("nodes", "limit", "group", "begin", "plain")
    TYPES = (("q", np.int64), ("d", np.float64), ("q", np.int64), ("d", np.float64), ("B", np.bool_))

    def __init__(self, jobs: list[Job], state: ClusterState | None):
        self.groups: dict[tuple, int] = {}
        self.members: list[Job] = []  # one job of each group, by group number
        self._lists = [array.array(code) for code, _ in self.TYPES]
        for at, job in enumerate(jobs):
            self.insert(at, job, state)

    def __len__(self) -> int:
        return len(self._lists[0])

    def window(self, first: int, end: int) -> dict[str, np.ndarray]:
        """The columns of the jobs at positions [first, end), as numpy arrays (copies) by name."""
        return {name: np.frombuffer(values[first:end], dtype)
                for name, values, (_, dtype) in zip(self.NAMES, self._lists, self.TYPES)}

    def group_at(self, at: int) -> int:
        return self._lists[2][at]

    def _group(self, job: Job) -> int:
        if job.req_nodes or job.reservation is not None:
            return -1
        key = (request_key(job), job.partition, job.exc_nodes)
        number = self.groups.get(key)
        if number is None:
            number = self.groups[key] = len(self.members)
            self.members.append(job)
        return number

    def insert(self, at: int, job: Job, state: ClusterState) -> None:
        values = (job.num_nodes, float(job.time_limit), self._group(job), float(job.begin_time), _plain(job, state))
        for column, value in zip(self._lists, values):
            column.insert(at, value)

    def delete(self, at: int) -> None:
        for column in self._lists:
            del column[at]


def _plain(job: Job, state: ClusterState) -> bool:
    """Nothing but its begin time and resources keeps the job waiting, whatever happens, and
    backfill tests it (a heterogeneous job's components are the main stage's alone)."""
    return (not job.req_nodes and job.reservation is None and job.array_max_running is None
            and job.dependency is None and job.het_job_id is None
            and blocked_reason(job, state, math.inf) is None)


def smallest_request(jobs, floor: tuple[int, int, int] | None = None) -> tuple[int, int, int]:
    """The least CPUs, memory and GPUs per node any of ``jobs`` asks for (each taken alone:
    a lower bound for every one of them), and no more than ``floor``.  A whole-node job
    (``--exclusive``, ``--mem=0``) counts as asking for nothing of what it takes whole."""
    cpu, mem, gpu = floor if floor is not None else (1 << 62, 1 << 62, 1 << 62)
    for job in jobs:
        shape = job.shape
        whole = job.exclusive
        cpu = min(cpu, 0 if whole else shape.cpus)
        mem = min(mem, 0 if whole or shape.mem == -1 else shape.mem)
        gpu = min(gpu, 0 if whole else shape.gpus)
    if not jobs and floor is None:
        return (0, 0, 0)
    return cpu, mem, gpu


def priority_order(state: ClusterState, memory: QueueOrder | None = None) -> list[Job]:
    """The pending jobs in evaluation order; ``memory`` saves sorting again between passes."""
    return (memory or QueueOrder())(state)
