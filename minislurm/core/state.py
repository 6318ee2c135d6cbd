"""The controller's in-memory tables: jobs, nodes, partitions, reservations, and their transitions.

Both the simulator and the live controller own one :class:`ClusterState` and change it only
through these methods, so a job's life (start, finish, requeue) follows the same rules in
both worlds.  Nothing here decides *which* job runs: that is :mod:`minislurm.sched`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from minislurm.core.cluster import ClusterConfig, PartitionConfig
from minislurm.core.deps import Dependency
from minislurm.core.job import Allocation, Job
from minislurm.core.nodes import NodeTable
from minislurm.core.reservation import AdvanceReservation
from minislurm.core.states import DependencyOutcome, JobState, Reason


class ClusterState:
    def __init__(self, config: ClusterConfig):
        self.config = config
        self.nodes = NodeTable(config.nodes)
        self.partitions: dict[str, PartitionConfig] = {p.name: p for p in config.partitions}
        self.jobs: dict[int, Job] = {}
        self.pending: dict[int, Job] = {}
        self.running: dict[int, Job] = {}
        self.reservations: dict[str, AdvanceReservation] = {}
        self.array_tasks: dict[int, list[int]] = defaultdict(list)
        self.array_running: dict[int, int] = defaultdict(int)
        self.next_job_id = config.first_job_id
        self.version = 0  # bumped on every change the scheduler could care about
        self.order_epoch = 0  # bumped when the queue order may change (see reprioritized)
        # The ids of jobs that joined or left the queue or the running jobs, oldest first, for
        # a reader that keeps its own copy of either (QueueOrder, Releases) and need not compare
        # them whole each pass; the oldest entries are dropped as it grows (``journal_start``
        # counts them).  Any other change a reader may have copied (a running job's time
        # limit, a priority) calls ``reprioritized``, after which readers start afresh.
        self.journal: list[int] = []
        self.journal_start = 0
        self.with_dependency: set[int] = set()  # pending jobs that have a dependency
        self._part_masks: dict[str, np.ndarray] = {}
        self._part_cpus: dict[str, int] = {}

    # -- lookups -------------------------------------------------------------------
    def partition_mask(self, name: str) -> np.ndarray:
        """Boolean array over nodes: which nodes belong to the partition."""
        mask = self._part_masks.get(name)
        if mask is None:
            mask = np.zeros(len(self.nodes), dtype=bool)
            for n in self.partitions[name].nodes:
                if n in self.nodes.index:
                    mask[self.nodes.index[n]] = True
            self._part_masks[name] = mask
        return mask

    def partition_cpus(self, name: str) -> int:
        """How many CPUs the partition's nodes have in all (cached like the masks)."""
        total = self._part_cpus.get(name)
        if total is None:
            total = self._part_cpus[name] = int(self.nodes.cap_cpu[self.partition_mask(name)].sum())
        return total

    def default_partition(self) -> PartitionConfig | None:
        return self.config.partition(None)

    def touch(self) -> None:
        self.version += 1

    def reprioritized(self) -> None:
        """Say that priorities, holds, nice values or partition tiers changed: re-sort the queue."""
        self.order_epoch += 1
        self.touch()

    def set_priorities(self, priorities: Mapping[int, int]) -> None:
        """Record recomputed priorities (:func:`minislurm.sched.priority.recompute`)."""
        for job_id, value in priorities.items():
            self.jobs[job_id].priority = value
        self.reprioritized()

    # Every change that moves a job in the queue's order goes through one of these, so the
    # order and the releases kept between passes (sched/order, sched/releases) learn of it.
    def hold(self, job: Job, kind: str) -> None:
        """Hold a job (``user`` or ``admin``); a running one's hold applies if it is requeued."""
        job.hold, job.priority, job.reason = kind, 0, Reason.held(kind)
        self.reprioritized()

    def release(self, job: Job, priority: int) -> None:
        job.hold, job.priority, job.reason = None, priority, Reason.NONE
        self.reprioritized()

    def update(self, job: Job, changes: Mapping[str, object]) -> None:
        """Change a job's fields (``scontrol update``: time limit, nice, account, ...)."""
        for name, value in changes.items():
            setattr(job, name, value)
        self.reprioritized()

    def set_max_time(self, partition: str, seconds: float) -> None:
        """A partition's MaxTime changed: which of its jobs it takes changed too."""
        self.partitions[partition].max_time = seconds
        self.reprioritized()

    # -- transitions ---------------------------------------------------------------
    def _queued(self, job: Job) -> None:
        self.pending[job.job_id] = job
        if job.dependency is not None:
            self.with_dependency.add(job.job_id)
        self._journal(job.job_id)

    def _dequeued(self, job_id: int) -> None:
        if self.pending.pop(job_id, None) is not None:
            self.with_dependency.discard(job_id)
            self._journal(job_id)

    def _journal(self, job_id: int) -> None:
        journal = self.journal
        journal.append(job_id)
        if len(journal) > 4096 and len(journal) > 2 * (len(self.pending) + len(self.running)):
            half = len(journal) // 2
            del journal[:half]
            self.journal_start += half

    def het_components(self, job: Job) -> list[Job]:
        """Every component of ``job``'s heterogeneous job, the leader first ([job] for any
        other job): their ids follow the leader's."""
        if job.het_job_id is None:
            return [job]
        out: list[Job] = []
        while (c := self.jobs.get(job.het_job_id + len(out))) is not None and c.het_job_id == job.het_job_id:
            out.append(c)
        return out

    def used_job_ids(self, last: int) -> None:
        """Ids up to ``last`` are taken (by the jobs of a submission, or a refused one that
        keeps its id: :func:`minislurm.sched.submit.build_jobs`)."""
        self.next_job_id = max(self.next_job_id, last + 1)

    def new_job_id(self) -> int:
        job_id = self.next_job_id
        self.next_job_id += 1
        return job_id

    def add(self, job: Job) -> Job:
        """Queue a job that has passed submission checks."""
        self.jobs[job.job_id] = job
        self._queued(job)
        if job.array_job_id is not None:
            self.array_tasks[job.array_job_id].append(job.job_id)
        self.touch()
        return job

    def restore(self, job: Job) -> None:
        """Put back a job saved by an earlier controller, in the tables its state says: a
        pending job queued, a running one holding its allocation, a finished one on record."""
        self.jobs[job.job_id] = job
        if job.array_job_id is not None:
            self.array_tasks[job.array_job_id].append(job.job_id)
        if job.state is JobState.PENDING:
            self._queued(job)
        elif job.state is JobState.RUNNING and job.alloc is not None:
            self.nodes.allocate(job.job_id, job.alloc)
            self.running[job.job_id] = job
            if job.array_job_id is not None:
                self.array_running[job.array_job_id] += 1
        self.reprioritized()

    def start(self, job: Job, alloc: Allocation, now: float) -> None:
        """Run the job on ``alloc``.  A task still in its array's record is split off first and
        takes its own id (:meth:`split_off`): read ``job.job_id`` after this call."""
        self._dequeued(job.job_id)
        if job.job_id < 0:
            self.split_off(job)
        self.nodes.allocate(job.job_id, alloc)
        self.running[job.job_id] = job
        job.state = JobState.RUNNING
        job.reason = Reason.NONE
        job.alloc = alloc
        job.start_time = now
        job.end_time = None
        if job.array_job_id is not None:
            self.array_running[job.array_job_id] += 1
        self.touch()

    def split_off(self, job: Job) -> None:
        """Give a task of an array's record (one starting, or one held by itself) the id Slurm
        gives it: the next free id, or, for the last task left pending in the record, the
        array's own id.  A pending task stays queued, under its new id."""
        array = job.array_job_id
        tasks = self.array_tasks[array]
        queued = job.job_id in self.pending
        if queued:
            self._dequeued(job.job_id)
        new_id = self.new_job_id() if self.in_record_beside(job) or array in self.jobs else array
        tasks[tasks.index(job.job_id)] = new_id
        del self.jobs[job.job_id]
        job.job_id = new_id
        self.jobs[new_id] = job
        if queued:
            self._queued(job)
        self.reprioritized()  # readers that keep copies (QueueOrder, Releases) knew the old key

    def in_record_beside(self, job: Job) -> bool:
        """Whether another task still waits in the array record ``job`` is in."""
        return any(t < 0 and t != job.job_id and self.jobs[t].pending for t in self.array_tasks[job.array_job_id])

    def forget_task(self, job: Job) -> None:
        """Take a pending task out of its array's record as if it had never been in it (Slurm
        clears its bit: no record is left of it, not even in accounting)."""
        self._dequeued(job.job_id)
        self.array_tasks[job.array_job_id].remove(job.job_id)
        del self.jobs[job.job_id]
        self.touch()

    def _release(self, job: Job) -> None:
        if job.job_id in self.running:
            del self.running[job.job_id]
            self._journal(job.job_id)
            self.nodes.release(job.job_id, job.alloc)
            if job.array_job_id is not None:
                self.array_running[job.array_job_id] -= 1

    def finish(self, job: Job, state: JobState, now: float, exit_code: int = 0,
               reason: str = Reason.NONE) -> None:
        """End a job for good (COMPLETED, FAILED, TIMEOUT, CANCELLED, NODE_FAIL ...)."""
        self._release(job)
        self._dequeued(job.job_id)
        job.state = state
        job.exit_code = exit_code
        job.reason = reason
        job.end_time = now
        if job.start_time is None:
            job.start_time = now  # Slurm reports a cancelled pending job as starting when it ended
        self.touch()

    def requeue(self, job: Job, now: float, hold: str | None = None) -> None:
        """Back to PENDING with the same id: restart count up, age reset, eligible after a delay.

        The caller records the run that ended (NODE_FAIL, REQUEUED) before calling this.
        """
        self._release(job)
        job.state = JobState.PENDING
        job.alloc = None
        job.start_time = job.end_time = None
        job.restart_count += 1
        job.submit_time = now
        job.begin_time = now + self.config.sched.requeue_delay + (1 if self.config.sched.requeue_delay else 0)
        if hold:  # requeued held (requeuehold, a launch failure); a hold put on the running job stays
            job.hold, job.priority = hold, 0
        # What squeue says until the next pass looks: a hold outranks the delay.
        job.reason = Reason.held(job.hold) if job.hold else Reason.BEGIN_TIME
        self._queued(job)
        self.reprioritized()

    def settle_dependencies(self, settled: Mapping[int, str | Dependency]) -> None:
        """Record the dependency results a pass found final (``PassResult.settled``).

        OK clears the dependency (scontrol then shows ``Dependency=(null)``); NEVER
        marks it failed for good, so a requeued target cannot revive it; a
        :class:`Dependency` replaces the job's with the items still unsettled.  Call it after
        every pass, main or backfill, as the pass itself changes nothing.
        """
        for job_id, outcome in settled.items():
            job = self.jobs.get(job_id)
            if job is None:
                continue
            if outcome == DependencyOutcome.OK:
                job.dependency = None
                self.with_dependency.discard(job_id)
            elif outcome == DependencyOutcome.NEVER:
                job.dependency_failed = True
            else:
                job.dependency = outcome
        if settled:
            self.touch()

    # -- nodes and reservations -----------------------------------------------------
    def add_reservation(self, resv: AdvanceReservation) -> None:
        self.reservations[resv.name] = resv
        self.touch()

    def remove_reservation(self, name: str) -> None:
        del self.reservations[name]
        self.touch()

    def jobs_on_node(self, n: int) -> list[Job]:
        return [self.running[j] for j in sorted(self.nodes.jobs[n]) if j in self.running]

    def elapsed(self, job: Job, now: float) -> float:
        if job.start_time is None:
            return 0.0
        return (job.end_time if job.end_time is not None else now) - job.start_time

    def time_left(self, job: Job, now: float) -> float:
        return math.inf if job.time_limit == math.inf else job.time_limit - self.elapsed(job, now)
