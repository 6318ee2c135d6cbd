"""A handful of jobs through time on a tiny cluster, every decision taken by minislurm's scheduler.

The backfill lessons need two things a trace replay does not keep: the GPU indices each job
got, and the start the scheduler *promised* a waiting job (what ``squeue --start`` shows) at
each pass.  So a lesson runs the trace simulator itself (:class:`minislurm.sim.engine.Simulator`)
with an observer that keeps both, and every waiting job's reason: jobs arrive at their submit
times and run for their run time (or until their time limit, which ends them as TIMEOUT), and
after every arrival, end or reservation boundary one full pass (main stage, then backfill)
decides what starts and where.  Nothing in this module chooses a job or a node.

Simplification, said so in the book: real Slurm runs the main scheduler on events and the
backfill pass every ``bf_interval`` (30 s by default); here both run at each event
(``Simulator(every_event=True)``), so a job that Slurm would backfill at the next 30-second
tick starts at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from minislurm.core import errors
from minislurm.core.cluster import simple_cluster
from minislurm.core.reservation import AdvanceReservation
from minislurm.core.state import ClusterState
from minislurm.sched.apply import Applied
from minislurm.sched.schedule import PassResult
from minislurm.sim.engine import Simulator
from minislurm.sim.traces import TraceJob

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
    sim, result = scenario_simulator(jobs, nodes=nodes, gpus_per_node=gpus_per_node, cpus_per_node=cpus_per_node,
                                     policy=policy, reservations=reservations, bf_resolution=bf_resolution)
    try:
        sim.run()
    except ValueError:
        stuck = sorted(result.jobs[int(j.name)].name for j in sim.state.pending.values())
        raise ValueError(f"jobs {stuck} can never start on this cluster") from None
    return result


def scenario_simulator(jobs: Iterable[LabJob], *, nodes: int = 2, gpus_per_node: int = 4, cpus_per_node: int = 32,
                       policy: str = "conservative", reservations: Iterable[AdvanceReservation] = (),
                       bf_resolution: float = 1.0) -> tuple[Simulator, ScenarioResult]:
    """The simulator :func:`run_scenario` runs (its jobs named by their index in ``jobs``), and
    the result its observer fills; a lesson that looks inside a pass adds observers of its own."""
    jobs = list(jobs)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    _check(jobs, nodes, gpus_per_node)
    cfg = simple_cluster(nodes, cpus=cpus_per_node, gpus=gpus_per_node, policy=policy,
                         bf_resolution=bf_resolution)
    resvs = list(reservations)
    result = ScenarioResult(policy, [n.name for n in cfg.nodes], gpus_per_node, jobs, reservations=resvs)
    trace = [TraceJob(i, j.submit, j.work, j.limit, j.nodes, max(1, j.gpus), j.gpus, user=j.user,
                      reservation=j.reservation) for i, j in enumerate(jobs)]
    sim = Simulator(cfg, trace, reservations=resvs, speedups=False, every_event=True)
    sim.observers.append(lambda res, applied: _observe(sim.state, res, applied, result))
    return sim, result


def _observe(state: ClusterState, res: PassResult, applied: Applied, result: ScenarioResult) -> None:
    """After each pass: each start's nodes and GPUs, each promise, each job's first reason."""
    def spec(job_id: int) -> LabJob:
        return result.jobs[int(state.jobs[job_id].name)]  # the simulator names a job by its trace id

    result.passes += 1
    for s in applied.started:
        job, lab = s.job, spec(s.job.job_id)
        completed = lab.work <= lab.limit
        result.runs[lab.name] = Run(lab.name, job.job_id, res.now, res.now + min(lab.work, lab.limit),
                                    job.alloc.nodes, job.alloc.gpus, s.backfilled,
                                    "COMPLETED" if completed else "TIMEOUT")
    for job_id, when in res.expected_start.items():
        result.promises.setdefault(spec(job_id).name, []).append(
            Promise(res.now, when, res.planned_nodes.get(job_id, ())))
    for job_id in state.pending:
        result.reasons.setdefault(spec(job_id).name, res.reasons[job_id])
