"""The simulator: the same ClusterState and the same scheduling passes as the controller, on a
SimPy clock.

* a main pass (``schedule(..., backfill_cycle=False)``) after every submission and completion;
* a backfill pass every ``bf_interval`` seconds, skipped when nothing changed since the last
  one (a cycle with no new, ended or newly eligible job makes the same decisions);
* every pass applied by :func:`minislurm.sched.apply.apply`, as the controller applies its own,
  then shown to the observers (the lessons' driver, lab/scenario.py, is one);
* jobs run for their trace run time, or until their time limit (TIMEOUT);
* optional node failures (:mod:`minislurm.sim.failures`), noticed after SlurmdTimeout, with
  Slurm's requeue (same id, restart count + 1, eligible again after the requeue delay); jobs
  checkpoint every ``checkpoint_interval`` seconds of work, each write taking
  ``checkpoint_cost`` seconds of their run;
* with ``PriorityType=priority/multifactor``, the controller's priority rule on the simulated
  clock: a job's priority at submission with the fair-share factors of that moment, every
  pending job's recomputed every ``PriorityCalcPeriod`` (from t=0, as the controller does from
  its start), and every run's CPU-seconds charged to its association when it ends (decayed
  with ``PriorityDecayHalfLife``) -- the same :class:`~minislurm.sched.sharebook.FairShareBook`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

import simpy

from minislurm.core.cluster import ClusterConfig
from minislurm.core.errors import SlurmError
from minislurm.core.job import Job, Shape, task_key
from minislurm.core.reservation import AdvanceReservation
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState, Reason
from minislurm.sched import priority
from minislurm.sched.apply import Applied, apply, requeue_or_fail
from minislurm.sched.order import QueueOrder
from minislurm.sched.releases import Releases
from minislurm.sched.schedule import PassResult, schedule
from minislurm.sched.sharebook import FairShareBook
from minislurm.sched.submit import record_jobs, refusal
from minislurm.sim.failures import FailureModel, checkpointed, wall_time
from minislurm.sim.records import Capacity, JobRecord, Segment


class Simulator:
    def __init__(self, config: ClusterConfig, jobs: Iterable, *, failures: FailureModel | None = None,
                 checkpoint_interval: float | None = None, checkpoint_cost: float = 0.0, progress: bool = False,
                 reservations: Iterable[AdvanceReservation] = (), fairshare=None, speedups: bool = True,
                 every_event: bool = False, observers: Iterable[Callable[[PassResult, Applied], None]] = ()):
        """``fairshare``: the FairShareBook to charge (one with the associations of an
        accounts.conf); by default, with priority/multifactor, an empty one, as the controller's
        without an accounts.conf.  ``speedups=False``: every pass sorts the queue afresh, plans
        the running jobs' releases afresh and tests every job it may (``promise_all``), as the
        policy reads without its accelerators, and gives every waiting job its reason; the
        decisions must not change (tests/sim/test_speedups.py).  ``every_event``: a full pass
        (main stage, then backfill) after every event, instead of a main pass per event and a
        backfill pass every bf_interval (the lessons' simplification, lab/scenario.py).
        ``observers``: called after each pass is applied, with its result and what applying it
        changed (a lesson keeps each start's GPUs, each promise and each reason)."""
        self.env = simpy.Environment()
        self.state = ClusterState(config)
        self.multifactor = config.priority.type == "priority/multifactor"
        if self.multifactor and fairshare is None:
            fairshare = FairShareBook(config)
        self.fairshare = fairshare if self.multifactor else None
        for resv in reservations:  # advance reservations made before the replay begins
            self.state.add_reservation(resv)
        self.speedups = speedups
        self.every_event = every_event
        self.observers = list(observers)
        self.queue_order = QueueOrder()
        self.releases = Releases()
        self.trace = sorted(jobs, key=lambda j: (j.submit, j.job_id))
        self.failures = failures
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_cost = checkpoint_cost
        self.progress = progress
        self.records: dict[int, JobRecord] = {}
        self._ids: dict[int, int] = {}  # trace id -> the replay's job id (an array's own)
        self._keys: dict[int, list[int]] = {}  # trace id -> its jobs' record keys (_key)
        self.rejected: list[tuple[int, str]] = []
        self.passes = {"main": 0, "backfill": 0}
        self._work_done: dict[int, float] = {}  # checkpointed seconds of work per job
        self._dead: set[int] = set()  # nodes that died and are not yet noticed
        self._main_due = self._bf_due = False
        self._dirty = False
        self._idle_recalc = False
        self._outstanding = 0
        self._finished = self.env.event()
        self._bar = None
        self.wall_s = 0.0

    @property
    def capacity(self) -> Capacity:
        n = self.state.nodes
        return Capacity(len(n), int(n.cap_cpu.sum()), int(n.cap_gpu.sum()))

    # -- driving ------------------------------------------------------------------
    def run(self) -> list[JobRecord]:
        t0 = time.perf_counter()
        if self.progress:
            from tqdm import tqdm
            self._bar = tqdm(total=len(self.trace), unit="job", desc="replay", mininterval=0.5)
        self._outstanding = len(self.trace)
        self.env.process(self._arrivals())
        if self.multifactor:
            self._recalc(None)
        for resv in self.state.reservations.values():  # a reservation's start and end change who may run
            for when in (resv.start, resv.end):
                if when > self.env.now and when != math.inf:
                    self.env.timeout(when - self.env.now).callbacks.append(lambda _e: self._kick())
        if self.failures:
            for n in range(len(self.state.nodes)):
                self.env.process(self._node_life(n))
        try:
            self.env.run(until=self._finished)
        except RuntimeError:  # simpy ran out of events: some jobs can never start
            if self._finished.triggered or not self.state.pending:
                raise
            job, n = min(self.state.pending.values(), key=lambda j: j.job_id), len(self.state.pending)
            raise ValueError(f"{n} job{'s' if n != 1 else ''} can never start, e.g. trace job "
                             f"{job.name} ({job.num_nodes} nodes of {job.shape}): the cluster "
                             "cannot host it now and nothing left to happen will change that") from None
        if self._bar:
            self._bar.close()
        self.wall_s = time.perf_counter() - t0
        return list(self.records.values())

    def _arrivals(self):
        part = self.state.default_partition().name
        for tj in self.trace:
            if tj.submit > self.env.now:
                yield self.env.timeout(tj.submit - self.env.now)
            self._submit(tj, tj.partition or part)
        if not self._outstanding and not self._finished.triggered:
            self._finished.succeed()

    def _submit(self, tj, partition: str) -> None:
        st, now = self.state, self.env.now
        # One admission: the job the controller would make of the request (build_jobs's template).
        try:
            jobs = record_jobs(st.new_job_id(), st, partition=partition, now=now, user=tj.user,
                               account=tj.account, name=str(tj.job_id), time_limit=tj.time_limit,
                               num_nodes=tj.nodes,
                               shape=Shape(cpus=tj.cpus_per_node, mem=tj.mem_per_node, gpus=tj.gpus_per_node),
                               reservation=tj.reservation, dependency=self._replay_ids(tj.dependency),
                               array=tj.array)
        except SlurmError as exc:
            why = str(exc)
        else:
            # What could never start is refused at submission (EnforcePartLimits), not left pending.
            why = refusal(jobs[0], st, enforce_part_limits=True)
        if why is not None:
            self.rejected.append((tj.job_id, why))
            self._done_one()
            return
        self._outstanding += len(jobs) - 1  # an array's tasks each end on their own
        fairshare = self.fairshare.for_jobs(jobs[:1], now) if self.fairshare else None  # one user, one account
        self._ids[tj.job_id] = jobs[0].shown_id
        self._keys[tj.job_id] = [_key(job) for job in jobs]
        for job in jobs:
            job.priority = priority.initial(job, st, now, fairshare)
            st.add(job)
            self.records[_key(job)] = JobRecord(job.job_id, now, None, None, job.num_nodes,
                                                job.num_nodes * job.shape.gpus, job.num_nodes * job.shape.cpus,
                                                tj.runtime, tj.time_limit)
            self._work_done[_key(job)] = 0.0
        self._kick()

    def records_of(self, trace_id: int) -> list[JobRecord]:
        """What became of a trace record: its job's record, or its array tasks' in index order
        (none if it was refused)."""
        return [self.records[key] for key in self._keys.get(trace_id, ())]

    def _replay_ids(self, dependency):
        """A record's dependency on trace ids, on the replay's job ids instead (a record never
        admitted has none: its id is dropped, as Slurm drops an unknown one)."""
        if dependency is None:
            return None
        return replace(dependency, terms=tuple((kind, tuple(self._ids.get(i, 0) for i in ids))
                                              for kind, ids in dependency.terms))

    def _done_one(self) -> None:
        self._outstanding -= 1
        if self._bar:
            self._bar.update()
        if self._outstanding == 0 and not self._finished.triggered:
            self._finished.succeed()

    # -- scheduling ---------------------------------------------------------------
    def _kick(self) -> None:
        """Something changed: a main pass now, and a backfill pass at the next bf_interval tick."""
        self._dirty = True
        if not self._main_due:
            self._main_due = True
            self.env.timeout(0).callbacks.append(self._main_pass)
        cfg = self.state.config.sched
        if not self._bf_due and cfg.policy != "fifo" and not self.every_event:
            self._bf_due = True
            tick = cfg.bf_interval
            nxt = math.ceil(self.env.now / tick) * tick  # a change on a tick is seen by that tick
            self.env.timeout(nxt - self.env.now).callbacks.append(self._backfill_pass)

    def _main_pass(self, _event) -> None:
        self._main_due = False
        if self.state.pending:
            self.passes["main"] += 1
            self._apply(self._schedule(backfill_cycle=self.every_event))

    def _backfill_pass(self, _event) -> None:
        self._bf_due = False
        if self._dirty and self.state.pending:
            self._dirty = False
            self.passes["backfill"] += 1
            self._apply(self._schedule(backfill_cycle=True))

    def _schedule(self, backfill_cycle: bool) -> PassResult:
        """One pass; with the speed-ups: the queue order and the releases kept between passes,
        and a pass that stops once nothing more could start (a replay needs only decisions)."""
        if not self.speedups:
            return schedule(self.state, self.env.now, backfill_cycle=backfill_cycle, every_reason=True, shortcuts=False)
        return schedule(self.state, self.env.now, backfill_cycle=backfill_cycle, promise_all=False,
                        queue_order=self.queue_order, releases=self.releases if backfill_cycle else None)

    def _recalc(self, _event) -> None:
        """PriorityCalcPeriod: every pending job's priority recomputed, then a pass, as the
        controller's priority loop does.  It stops with the replay, or after a round that
        found nothing else left to happen (no event, nothing running) and whose pass started
        nothing: priorities alone start no job, and a replay that can go no further must end."""
        if self._finished.triggered:
            return
        idle = self.env.peek() == math.inf and not self.state.running
        if idle and self._idle_recalc:
            return
        self._idle_recalc = idle
        if self.state.pending:
            now = self.env.now
            factors = self.fairshare.factors(now) if self.fairshare else None
            self.state.set_priorities(priority.recompute(self.state, now, factors))
            self._kick()
        period = max(1.0, self.state.config.priority.calc_period)
        self.env.timeout(period).callbacks.append(self._recalc)

    def _charge(self, job: Job) -> None:
        """The run's usage, charged as the controller charges it when a run ends."""
        if self.fairshare is not None:
            self.fairshare.charge(job, self.env.now)

    def _apply(self, result: PassResult) -> None:
        now = self.env.now
        applied = apply(self.state, result)
        for job in applied.cancelled:  # --kill-on-invalid-dep
            self.records[_key(job)].end, self.records[_key(job)].state = now, job.state.name
            self._done_one()
        for start in applied.started:
            job = start.job
            rec = self.records[_key(job)]
            rec.job_id = job.job_id  # an array task's own id, from its start on
            if rec.start is None:
                rec.start = now
                rec.backfilled = start.backfilled
            needs = wall_time(rec.runtime - self._work_done[_key(job)], self.checkpoint_interval, self.checkpoint_cost)
            incarnation = job.restart_count
            self.env.timeout(min(needs, job.time_limit)).callbacks.append(
                lambda _e, job=job, inc=incarnation, ok=needs <= job.time_limit: self._end(job, inc, ok))
        for observe in self.observers:
            observe(result, applied)

    def _end(self, job: Job, incarnation: int, completed: bool) -> None:
        if job.restart_count != incarnation or job.state is not JobState.RUNNING:
            return  # this run was already ended by a node failure
        if any(n in self._dead for n in job.alloc.nodes):
            return  # its node died: the run ends when the controller notices (_node_down)
        now = self.env.now
        state = JobState.COMPLETED if completed else JobState.TIMEOUT
        self._segment(job, state.name, lost=0.0)
        self._charge(job)
        self.state.finish(job, state, now, reason=Reason.NONE if completed else Reason.TIME_LIMIT)
        rec = self.records[_key(job)]
        rec.end, rec.state = now, state.name
        self._done_one()
        self._kick()

    def _segment(self, job: Job, state: str, lost: float) -> None:
        a = job.alloc
        self.records[_key(job)].segments.append(
            Segment(job.job_id, job.start_time, self.env.now, a.nodes, a.num_gpus, a.num_cpus, state, lost))

    # -- failures -------------------------------------------------------------------
    def _node_life(self, n: int):
        timeout = self.state.config.slurmd_timeout
        for uptime in self.failures.uptimes(n):
            yield self.env.timeout(uptime)
            died = self.env.now
            self._dead.add(n)
            yield self.env.timeout(timeout)  # the controller notices after SlurmdTimeout
            self._dead.discard(n)
            self._node_down(n, died)
            yield self.env.timeout(max(self.failures.repair_s - timeout, 0))
            self.state.nodes.set_down(n, False)
            self._kick()

    def _node_down(self, n: int, died: float) -> None:
        st, now = self.state, self.env.now
        st.nodes.set_down(n, True, "Not responding")
        for job in st.jobs_on_node(n):
            progress = max(0.0, died - job.start_time)
            saved = checkpointed(progress, self.checkpoint_interval, self.checkpoint_cost)
            lost = (now - job.start_time - wall_time(saved, self.checkpoint_interval, self.checkpoint_cost)) \
                * job.alloc.num_gpus
            self._segment(job, JobState.NODE_FAIL.name, lost)
            self._charge(job)
            rec = self.records[_key(job)]
            if requeue_or_fail(st, job, now) is JobState.PENDING:
                self._work_done[_key(job)] += saved
                rec.restarts += 1
                # It becomes eligible again after the requeue delay: schedule a pass then.
                self.env.timeout(job.begin_time - now).callbacks.append(lambda _e: self._kick())
            else:
                rec.end, rec.state = now, JobState.NODE_FAIL.name
                self._done_one()
        st.touch()
        self._kick()


def _key(job: Job) -> int:
    """The key of a job's record: its id, or for an array task the key it waited under (a task
    takes its own id only as it starts)."""
    return task_key(job.array_job_id, job.array_task_id) if job.array_task_id is not None else job.job_id
