"""A handful of jobs through time on a tiny cluster, every decision taken by minislurm's scheduler.

The backfill lessons need two things the trace simulator does not keep: the GPU indices each
job got, and the start the scheduler *promised* a waiting job (what ``squeue --start`` shows)
at each pass.  This driver keeps both.  It is a miniature of
:class:`minislurm.sim.engine.Simulator`: jobs arrive at their submit times and run for their run
time (or until their time limit, which ends them as TIMEOUT); after every arrival, end or
reservation boundary one full pass of :func:`minislurm.sched.schedule.schedule` (main stage,
then backfill) decides what starts and where.  Nothing in this module chooses a job or a node.

Simplification, said so in the book: real Slurm runs the main scheduler on events and the
backfill pass every ``bf_interval`` (30 s by default); here both run at each event, so a job
that Slurm would backfill at the next 30-second tick starts at once.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from minislurm.core import errors
from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.reservation import AdvanceReservation
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState, Reason
from minislurm.sched import priority
from minislurm.sched.apply import apply
from minislurm.sched.schedule import schedule

POLICIES = ("conservative", "easy", "fifo")


@dataclass(frozen=True)
class LabJob:
    """One job of a lesson scenario.  Times in seconds; ``gpus`` is per node, as ``--gres``."""

    name: str
    submit: float = 0.0
    nodes: int = 1
    gpus: int = 1
    limit: float = 3600.0  # what the user asked for with --time
    runtime: float | None = None  # what the job really needs; None: all of its limit
    user: str = "user"
    reservation: str | None = None  # --reservation=NAME

    @property
    def work(self) -> float:
        return self.limit if self.runtime is None else self.runtime


@dataclass
class Run:
    """Where and when a job ran: node indices and, per node, the GPU indices it held."""

    name: str
    job_id: int
    start: float
    end: float
    nodes: tuple[int, ...]
    gpus: tuple[tuple[int, ...], ...]
    backfilled: bool
    state: str  # COMPLETED or TIMEOUT


@dataclass(frozen=True)
class Promise:
    """A planned start the backfill pass gave a waiting job at pass time ``at``."""

    at: float
    start: float
    nodes: tuple[int, ...]


@dataclass
class ScenarioResult:
    policy: str
    node_names: list[str]
    gpus_per_node: int
    jobs: list[LabJob]
    runs: dict[str, Run] = field(default_factory=dict)
    promises: dict[str, list[Promise]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # the first pending reason seen
    reservations: list[AdvanceReservation] = field(default_factory=list)
    passes: int = 0

    def job(self, name: str) -> LabJob:
        return next(j for j in self.jobs if j.name == name)

    def start(self, name: str) -> float:
        return self.runs[name].start

    def wait(self, name: str) -> float:
        return self.runs[name].start - self.job(name).submit

    def first_promise(self, name: str) -> Promise | None:
        found = self.promises.get(name)
        return found[0] if found else None

    @property
    def order(self) -> list[str]:
        """Job names by start time (ties: submission order)."""
        return [r.name for r in sorted(self.runs.values(), key=lambda r: (r.start, r.job_id))]

    @property
    def backfilled(self) -> list[str]:
        return [n for n in self.order if self.runs[n].backfilled]

    @property
    def makespan(self) -> float:
        return max((r.end for r in self.runs.values()), default=0.0) - min(
            (j.submit for j in self.jobs), default=0.0)

    @property
    def mean_wait(self) -> float:
        return sum(self.wait(n) for n in self.runs) / len(self.runs) if self.runs else 0.0


def _check(jobs: Sequence[LabJob], nodes: int, gpus_per_node: int) -> None:
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"job names must be unique: {names}")
    for j in jobs:
        if j.nodes < 1 or j.nodes > nodes or j.gpus < 0 or j.gpus > gpus_per_node:
            raise ValueError(f"job {j.name}: {errors.NODE_CONFIG_UNAVAILABLE} "
                             f"({j.nodes} node(s) x {j.gpus} GPUs on {nodes} x {gpus_per_node} GPUs)")
        if not (j.limit > 0 and math.isfinite(j.limit)) or j.work <= 0 or j.submit < 0:
            raise ValueError(f"job {j.name}: limit and runtime must be positive and finite, submit >= 0")


def run_scenario(jobs: Iterable[LabJob], *, nodes: int = 2, gpus_per_node: int = 4,
                 cpus_per_node: int = 32, policy: str = "conservative",
                 reservations: Iterable[AdvanceReservation] = (),
                 bf_resolution: float = 1.0) -> ScenarioResult:
    """Play ``jobs`` on ``nodes`` identical GPU nodes under ``policy`` and record what happened.

    ``policy``: ``conservative`` (Slurm's sched/backfill), ``easy`` or ``fifo`` (sched/builtin).
    Priorities are Slurm's default (every multifactor weight 0): submit order.  Each job asks
    for one CPU per GPU (one CPU if it has none), so GPUs are what fills the nodes.
    ``bf_resolution`` defaults to one second so second-scale lessons are exact (Slurm: 60 s).
    """
    jobs = list(jobs)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    _check(jobs, nodes, gpus_per_node)
    cfg = simple_cluster(nodes, cpus=cpus_per_node, gpus=gpus_per_node, policy=policy,
                         bf_resolution=bf_resolution)
    state = ClusterState(cfg)
    resvs = list(reservations)
    for r in resvs:
        state.add_reservation(r)
    result = ScenarioResult(policy, list(state.nodes.names), gpus_per_node, jobs, reservations=resvs)
    arrivals = sorted(enumerate(jobs), key=lambda p: (p[1].submit, p[0]))
    ends: list[tuple[float, int, Job, bool]] = []  # (time, job id, job, completed)
    marks = sorted({t for r in resvs for t in (r.start, r.end) if math.isfinite(t)})
    by_id: dict[int, LabJob] = {}
    i, last = 0, -math.inf
    while True:
        future = [arrivals[i][1].submit] if i < len(arrivals) else []
        future += [ends[0][0]] if ends else []
        if state.pending:  # a reservation that opens or closes can let a waiting job start
            future += [t for t in marks if t > last]
        if not future:
            if state.pending:
                stuck = sorted(by_id[j].name for j in state.pending)
                raise ValueError(f"jobs {stuck} can never start on this cluster")
            break
        now = min(future)
        while ends and ends[0][0] == now:
            _, _, job, completed = heapq.heappop(ends)
            state.finish(job, JobState.COMPLETED if completed else JobState.TIMEOUT, now,
                         reason=Reason.NONE if completed else Reason.TIME_LIMIT)
        while i < len(arrivals) and arrivals[i][1].submit == now:
            spec = arrivals[i][1]
            job = Job(state.new_job_id(), user=spec.user, name=spec.name, partition="gpu",
                      submit_time=now, time_limit=spec.limit, num_nodes=spec.nodes,
                      shape=Shape(cpus=max(1, spec.gpus), gpus=spec.gpus), reservation=spec.reservation)
            job.priority = priority.initial(job, state, now)
            state.add(job)
            by_id[job.job_id] = spec
            i += 1
        _pass(state, now, result, by_id, ends)
        last = now
    return result


def _pass(state: ClusterState, now: float, result: ScenarioResult, by_id: dict[int, LabJob],
          ends: list) -> None:
    """One scheduling pass at ``now``; apply its starts and note its promises and reasons."""
    res = schedule(state, now, every_reason=True)
    result.passes += 1
    for s in apply(state, res).started:
        job, spec = s.job, by_id[s.key]
        completed = spec.work <= spec.limit
        end = now + min(spec.work, spec.limit)
        result.runs[spec.name] = Run(spec.name, job.job_id, now, end, job.alloc.nodes, job.alloc.gpus,
                                     s.backfilled, "COMPLETED" if completed else "TIMEOUT")
        heapq.heappush(ends, (end, job.job_id, job, completed))
    for job_id, when in res.expected_start.items():
        spec = by_id[job_id]
        result.promises.setdefault(spec.name, []).append(
            Promise(now, when, res.planned_nodes.get(job_id, ())))
    for job_id in state.pending:
        result.reasons.setdefault(by_id[job_id].name, res.reasons[job_id])
