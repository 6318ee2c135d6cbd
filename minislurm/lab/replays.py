"""Trace replays for the lessons: keep the per-job records, and sweep checkpoint intervals.

:func:`minislurm.sim.replay.replay` returns only the summary (and writes files); a lesson also
wants the records, to draw in memory.  :func:`replay_records` runs the same steps with the
same public pieces (``cluster_for``, ``read_trace``, ``Simulator``, ``summarize``); a test
checks that its summary equals ``replay``'s.

:func:`checkpoint_sweep` replays one trace slice with node failures (the simulator's failure
injection, seeded, so every interval sees the same failures) at several checkpoint intervals.
What a failure costs comes from the simulator (GPU time since the last checkpoint, plus the
wait until the controller notices); what checkpointing costs is computed here, because the
simulator does not stretch jobs by the time they spend writing checkpoints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from minislurm.sim import metrics
from minislurm.sim.engine import Simulator
from minislurm.sim.failures import FailureModel
from minislurm.sim.records import Capacity, JobRecord
from minislurm.sim.replay import ReplayOptions, cluster_for
from minislurm.sim.traces import TraceJob, read_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"


@dataclass(frozen=True)
class TracePreset:
    """A trace shipped in data/traces and the machine it is replayed on by default."""

    label: str
    path: Path
    nodes: int
    cpus_per_node: int
    gpus_per_node: int
    limit_jobs: int | None = None
    skip_jobs: int = 0  # start this many jobs into the trace (past a quiet warm-up)


PRESETS = {
    "lesson": TracePreset("lesson_small: 12 hand-made jobs, 4 nodes x 8 GPUs", DATA / "lesson_small.csv", 4, 32, 8),
    "hpc2n": TracePreset("HPC2N Seth: 57 days, 3,145 jobs, 120 nodes x 2 CPUs", DATA / "alea_hpc2n.swf", 120, 2, 0),
    # Philly's first weeks are a sparse warm-up; jobs 5,000-6,999 arrive over two busy days.
    "philly": TracePreset("Philly: 2,000 GPU jobs from two busy days, 64 nodes x 8 GPUs",
                          DATA / "rfold_philly_trace.csv", 64, 32, 8, 2000, 5000),
}


@dataclass
class Replay:
    summary: dict
    records: list[JobRecord]
    capacity: Capacity
    warnings: list[str]


def options(preset: str, **overrides) -> ReplayOptions:
    """ReplayOptions for a preset, with its machine shape; ``overrides`` win (policy, nodes, ...).
    Replay it with ``replay_records(opts, PRESETS[preset].skip_jobs)``."""
    p = PRESETS[preset]
    opts = ReplayOptions(trace=str(p.path), nodes=p.nodes, cpus_per_node=p.cpus_per_node,
                         gpus_per_node=p.gpus_per_node, limit_jobs=p.limit_jobs, charts=False)
    return replace(opts, **overrides)


def replay_records(opts: ReplayOptions, skip_jobs: int = 0) -> Replay:
    """:func:`minislurm.sim.replay.replay` without files, keeping the records.

    ``skip_jobs`` drops that many jobs from the start of the trace first (and shifts the rest so
    the first kept submission is at 0), for a slice from the middle of a long trace.
    """
    opts = replace(opts, warnings=list(opts.warnings))
    cfg = cluster_for(opts)
    first = cfg.nodes[0]
    limit = None if opts.limit_jobs is None else opts.limit_jobs + skip_jobs
    read = read_trace(opts.trace, opts.fmt, cores_per_node=first.cpus, gpus_per_node=first.gpus, limit=limit)
    if skip_jobs:
        read.jobs = [replace(j) for j in read.jobs[skip_jobs:]]
        start = read.jobs[0].submit if read.jobs else 0.0
        for j in read.jobs:
            j.submit -= start
    if not read.jobs:
        raise ValueError(f"no jobs to replay in {opts.trace}")
    failures = FailureModel(opts.mtbf_h * 3600, opts.repair_h * 3600, opts.seed) if opts.mtbf_h else None
    sim = Simulator(cfg, read.jobs, failures=failures, checkpoint_interval=opts.checkpoint_interval_s)
    records = sim.run()
    warnings = read.warnings + [f"trace job {job_id} rejected at submission: {why}" for job_id, why in sim.rejected]
    summary = metrics.summarize(records, sim.capacity, policy=cfg.sched.policy, wall_s=sim.wall_s)
    summary.update(trace=str(opts.trace), format=read.fmt, skipped_lines=read.skipped,
                   rejected=len(sim.rejected), nodes=len(cfg.nodes), cpus_per_node=first.cpus,
                   gpus_per_node=first.gpus, bf_max_job_test=cfg.sched.bf_max_job_test, passes=dict(sim.passes))
    return Replay(summary, records, sim.capacity, warnings)


# -- failures and checkpoints --------------------------------------------------------------

@dataclass(frozen=True)
class SweepPoint:
    interval_s: float
    lost_gpu_h: float  # work thrown away by failures (simulated)
    failures: int  # runs ended by a node failure
    checkpoints: int  # checkpoints written, over all jobs
    checkpoint_gpu_s: float  # GPU-seconds of work between checkpoints, summed: GPUs x checkpoints

    def overhead_gpu_h(self, cost_s: float) -> float:
        """GPU-hours spent writing checkpoints if each one stalls the job's GPUs ``cost_s`` seconds."""
        return self.checkpoint_gpu_s * cost_s / 3600.0

    def total_gpu_h(self, cost_s: float) -> float:
        return self.lost_gpu_h + self.overhead_gpu_h(cost_s)


@dataclass(frozen=True)
class FailureSetup:
    """The workload a failure lesson replays: a Philly slice on a small GPU cluster."""

    trace: str = str(DATA / "rfold_philly_trace.csv")
    jobs: int = 300
    nodes: int = 16
    gpus_per_node: int = 8
    cpus_per_node: int = 32
    repair_h: float = 2.0
    seed: int = 1


INTERVALS = (600.0, 1800.0, 3600.0, 2 * 3600.0, 4 * 3600.0, 8 * 3600.0, 16 * 3600.0)


def _jobs(setup: FailureSetup) -> list[TraceJob]:
    return read_trace(setup.trace, cores_per_node=setup.cpus_per_node, gpus_per_node=setup.gpus_per_node,
                      limit=setup.jobs).jobs


@lru_cache(maxsize=64)
def sweep_point(setup: FailureSetup, mtbf_h: float, interval_s: float) -> SweepPoint:
    """One replay with failures every ``mtbf_h`` hours per node and checkpoints every ``interval_s``."""
    if mtbf_h <= 0 or interval_s <= 0:
        raise ValueError("MTBF and checkpoint interval must be positive")
    opts = ReplayOptions(trace=setup.trace, nodes=setup.nodes, cpus_per_node=setup.cpus_per_node,
                         gpus_per_node=setup.gpus_per_node, policy="conservative", charts=False)
    jobs = _jobs(setup)
    sim = Simulator(cluster_for(opts), jobs, failures=FailureModel(mtbf_h * 3600, setup.repair_h * 3600, setup.seed),
                    checkpoint_interval=interval_s)
    records = sim.run()
    lost = sum(s.lost_gpu_s for r in records for s in r.segments) / 3600.0
    failures = sum(1 for r in records for s in r.segments if s.state == "NODE_FAIL")
    # A job checkpoints once per interval of work it does; its GPUs stall while it writes.
    counts = [(math.floor(j.runtime / interval_s), j.nodes * j.gpus_per_node) for j in jobs]
    return SweepPoint(interval_s, lost, failures, sum(c for c, _ in counts), float(sum(c * g for c, g in counts)))


def checkpoint_sweep(setup: FailureSetup, mtbf_h: float,
                     intervals: Sequence[float] = INTERVALS) -> list[SweepPoint]:
    return [sweep_point(setup, float(mtbf_h), float(i)) for i in sorted(set(intervals))]


def young_daly(cost_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum interval, sqrt(2 x checkpoint cost x MTBF of the job)."""
    return math.sqrt(2.0 * cost_s * mtbf_s)


def work_gpu_h(setup: FailureSetup) -> float:
    """The GPU-hours of useful work in the slice (what a failure-free run would use)."""
    return sum(j.runtime * j.nodes * j.gpus_per_node for j in _jobs(setup)) / 3600.0
