"""Scenario 1, a frontier lab's training run, made runnable (chapter 8, lab 8b).

* :func:`live_run`: on a live cluster of virtual nodes, one ``sbatch`` across all nodes but one
  whose tasks do light, checkpointed work; one virtual node crashes, the job is requeued and
  every task resumes from its checkpoint.
* :func:`measure_job_mtbf`: a job on ``n`` nodes fails when its first node does; draw node
  lifetimes and see that the job's mean time between failures is the node's divided by ``n``.
* :func:`reservation_replay`: the simulator runs the multi-week reservation for the whole run
  on a background of Philly jobs that backfill keeps around it, with failing nodes and spares
  if asked; :func:`reservation_figure` draws its nodes over the weeks.
* :func:`chain_plan`: the same run as a chain of jobs that each fit a partition's MaxTime.
"""

from __future__ import annotations

import math
from functools import lru_cache
import re
from dataclasses import dataclass, field, replace

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from minislurm.core.reservation import AdvanceReservation
from minislurm.lab.figures import RESERVATION_EDGE, LabFigure, new_figure
from minislurm.lab.replays import DATA, young_daly
from minislurm.sim.engine import Simulator
from minislurm.sim.failures import FailureModel
from minislurm.sim.records import JobRecord
from minislurm.sim.replay import ReplayOptions, cluster_for
from minislurm.sim.traces import read_trace
from minislurm.sim.traces._common import TraceJob

__all__ = ["young_daly", "measure_job_mtbf", "live_run", "reservation_replay", "ReservationRun",
           "reservation_figure", "chain_plan", "TRAIN_SCRIPT"]

DAY = 86400.0

# Each task counts to STEPS, a step every tenth of a second, and writes its step to its own
# checkpoint file every CKPT steps; started again (a requeued run), it goes on from there.
# A step waits with bash's own `read -t` on a pipe nothing writes to, not with `sleep`: 240
# tasks starting a `sleep` process ten times a second (2,400 a second) would load a 2-core
# machine far past anything a real training job does to the node it runs on.
TRAIN_SCRIPT = """#!/bin/bash
#SBATCH --job-name=frontier
#SBATCH --requeue
#SBATCH --ntasks-per-node=1
#SBATCH --output=frontier-%j.out
#SBATCH --open-mode=append
echo "run $SLURM_RESTART_COUNT on $SLURM_JOB_NUM_NODES nodes"
mkdir -p ckpt
srun bash -c '
  ckpt=ckpt/task$SLURM_PROCID; step=$(cat $ckpt 2>/dev/null || echo 0)
  [ $SLURM_PROCID = 0 ] && echo "task 0 starts at step $step"
  exec 3<> <(:)  # the pipe for read -t to wait on
  while [ $step -lt {steps} ]; do
    read -t 0.1 -u 3; step=$((step + 1))
    [ $((step % {ckpt})) = 0 ] && echo $step > $ckpt.tmp && mv $ckpt.tmp $ckpt
  done
  [ $SLURM_PROCID = 0 ] && echo "task 0 done at step $step"; true'
"""


def measure_job_mtbf(node_mtbf_h: float, nodes: int, failures: int = 20000, seed: int = 0) -> float:
    """The mean, over ``failures`` draws, of the time until the first of ``nodes`` nodes fails,
    each node's lifetime exponential with mean ``node_mtbf_h`` (hours)."""
    rng = np.random.default_rng(seed)
    first = rng.exponential(node_mtbf_h, size=(failures, nodes)).min(axis=1)
    return float(first.mean())


def live_run(sh, *, steps: int = 150, ckpt: int = 10, crash_after_step: int = 20, victim: str | None = None,
             timeout: float = 180.0) -> dict:
    """On ``sh`` (a :mod:`~minislurm.lab.terminal` of a cluster), run the training job on every
    node but one, crash one of its virtual nodes once task 0 has checkpointed
    ``crash_after_step``, and wait for the requeued run to finish.  Returns the job id, the node
    that crashed, and task 0's start step in each run."""
    nodes = len(sh.cluster.node_names)
    sh.write("frontier.sbatch", TRAIN_SCRIPT.format(steps=steps, ckpt=ckpt), show=False)
    job = sh.submit(f"sbatch -N{nodes - 1} frontier.sbatch")
    checkpoint = sh.work / "ckpt" / "task0"
    sh.until(lambda: checkpoint.exists() and checkpoint.read_text().strip().isdigit()
             and int(checkpoint.read_text()) >= crash_after_step, timeout=timeout, what="the first checkpoints")
    allocated = sh.job(job)["nodes"]
    from minislurm.core.hostlist import expand
    victim = victim or expand(allocated)[-1]
    sh.cluster.kill_node(victim)  # a virtual node crashes: its siblings run on
    sh.until(lambda: sh.job(job)["restart_count"] >= 1, timeout=timeout, what="the job to be requeued")
    sh.wait(job, timeout=timeout)
    out = sh.read(f"frontier-{job}.out")
    starts = [int(s) for s in re.findall(r"task 0 starts at step (\d+)", out)]
    sh.cluster.start_node(victim)
    return {"job": job, "victim": victim, "starts": starts, "state": sh.job(job)["state"], "output": out}


@dataclass(frozen=True)
class ReservationRun:
    """What the simulator saw of the frontier job and of its background."""

    start_h: float  # when the frontier job started, hours after the replay began
    end_h: float
    window_h: tuple[float, float]  # the reservation
    background_jobs: int
    background_done_before_window: int
    busy_before_window: float  # share of the reserved nodes' GPU time used before the window
    restarts: int = 0  # how often the frontier job was requeued after a node failure
    reserved: int = 0  # the reservation holds nodes 0 .. reserved - 1 (the job's and its spares)
    frontier: JobRecord | None = field(default=None, repr=False, compare=False)
    records: tuple[JobRecord, ...] = field(default=(), repr=False, compare=False)
    down: tuple[tuple[int, float, float], ...] = field(default=(), repr=False)  # (node, failed, back), s


def reservation_replay(*, nodes: int = 256, job_nodes: int = 240, gpus_per_node: int = 8,
                       weeks: float = 3.0, window_starts_h: float = 24.0, background: int = 1500,
                       evaluations: int = 300, policy: str = "conservative", spares: int = 0,
                       failures: FailureModel | None = None, checkpoint_h: float | None = None,
                       slack_days: float = 0.0) -> ReservationRun:
    """A reservation of ``job_nodes`` nodes (and ``spares`` more) from ``window_starts_h`` for
    ``weeks`` (and ``slack_days`` more), the frontier job of ``weeks`` of work inside it,
    ``background`` Philly jobs around it, and ``evaluations`` short evaluation jobs (2-6 h on
    1-8 nodes) submitted while the window approaches.  With ``failures`` nodes fail in the
    window and are repaired; the frontier job is requeued and resumes from its last checkpoint
    (every ``checkpoint_h`` hours of work) on the reservation's healthy nodes, which without
    spares means waiting for the repair.  A run the window cannot hold any more waits for ever
    (reason Reservation): the simulator says it can never start (ValueError)."""
    opts = ReplayOptions(trace=str(DATA / "rfold_philly_trace.csv"), nodes=nodes, gpus_per_node=gpus_per_node,
                         cpus_per_node=32, policy=policy, charts=False)
    config = cluster_for(opts)
    length = weeks * 7 * DAY
    jobs = _background(opts.trace, gpus_per_node, background, window_starts_h * 3600.0 + length)
    jobs += _evaluations(max(j.job_id for j in jobs) + 1, evaluations, window_starts_h * 3600.0, gpus_per_node)
    start = window_starts_h * 3600.0
    held = job_nodes + spares
    reserved = tuple(n.name for n in config.nodes[:held])
    end = start + length + slack_days * DAY
    resv = AdvanceReservation("frontier", reserved, start, end, users=frozenset({"frontier"}))
    failures = replace(failures, until=min(failures.until, end)) if failures else None
    run_id = max(j.job_id for j in jobs) + 1
    frontier = TraceJob(run_id, 0.0, length, length, job_nodes, 32, gpus_per_node, user="frontier",
                        reservation="frontier")
    interval = checkpoint_h * 3600.0 if checkpoint_h else None
    records = {r.job_id: r for r in Simulator(config, [*jobs, frontier], reservations=[resv], failures=failures,
                                              checkpoint_interval=interval).run()}
    mine = next(r for r in records.values() if r.runtime == length and r.nodes == job_nodes)
    others = [r for r in records.values() if r is not mine]
    done_before = sum(1 for r in others if r.end is not None and r.end <= start)
    # GPU time used on the reserved nodes before the window: background segments there
    reserved_idx = set(range(held))
    used = 0.0
    for r in others:
        for seg in r.segments:
            share = len(reserved_idx & set(seg.nodes)) / max(1, len(seg.nodes))
            used += share * seg.gpus * max(0.0, min(seg.end, start) - seg.start)
    busy = used / (held * gpus_per_node * start) if start else 0.0
    down = tuple((n, t, t + failures.repair_s) for n in range(nodes)
                 for t in failures.failure_times(n, mine.end)) if failures else ()
    return ReservationRun(mine.start / 3600, mine.end / 3600, (start / 3600, end / 3600),
                          len(others), done_before, busy, mine.restarts, held, mine, tuple(records.values()), down)


def _spares(run: ReservationRun) -> str:
    extra = run.reserved - run.frontier.nodes
    return "no spares" if extra == 0 else f"{extra} spare{'s' if extra != 1 else ''}"


def reservation_figure(run: ReservationRun, other: ReservationRun | None = None, *, title: str = "") -> LabFigure:
    """Every node hour by hour, the reservation's at the top: the frontier job, other jobs,
    idle, and DOWN from a failure to its repair (a cross where one hit the frontier job); under
    it the frontier job's runs, and those of ``other`` (the same replay with fewer spares)."""
    names, colours = ("idle", "other jobs", "frontier job", "DOWN"), ["#ffffff", "#c8c8c8", "#4e79a7", "#e15759"]
    nodes = max(n for r in run.records for seg in r.segments for n in seg.nodes) + 1
    grid = np.zeros((nodes, int(max(r.end or 0.0 for r in run.records) // 3600) + 1), dtype=np.int8)
    for r in run.records:
        for seg in r.segments:
            grid[list(seg.nodes), int(seg.start // 3600):math.ceil(seg.end / 3600)] = 2 if r is run.frontier else 1
    for n, failed, back in run.down:
        grid[n, int(failed // 3600):math.ceil(back / 3600)] = 3
    fig = new_figure(9.0, 5.8)
    top, bottom = fig.subplots(2, 1, height_ratios=[4, 1], sharex=True)
    top.imshow(grid, aspect="auto", interpolation="nearest", cmap=ListedColormap(colours), vmin=0, vmax=3,
               extent=(0, grid.shape[1] / 24, nodes, 0), gid="nodes")
    hits = [(failed, n) for n, failed, _ in run.down
            if any(n in seg.nodes and seg.start <= failed <= seg.end for seg in run.frontier.segments)]
    top.scatter([t / DAY for t, _ in hits], [n + 0.5 for _, n in hits], marker="x", s=60, linewidths=2,
                color="#9d2a2c", zorder=3, gid="hits")
    top.axhline(run.reserved, color=RESERVATION_EDGE, linewidth=1.5)
    top.axvline(run.window_h[0] / 24, color=RESERVATION_EDGE, linestyle="--", linewidth=1)
    top.axvline(run.window_h[1] / 24, color=RESERVATION_EDGE, linestyle="--", linewidth=1)
    top.text(run.window_h[0] / 24 + 0.3, run.reserved * 0.85,
             f"reservation: nodes 1-{run.reserved}, {run.reserved - run.frontier.nodes} of them spares",
             color=RESERVATION_EDGE, fontsize=8, bbox={"facecolor": "white", "edgecolor": RESERVATION_EDGE})
    top.set_ylabel("node")
    lanes = [(_spares(run), run)] + ([(_spares(other), other)] if other else [])
    for row, (name, r) in enumerate(lanes):
        segs = r.frontier.segments
        bottom.broken_barh([(seg.start / DAY, (seg.end - seg.start) / DAY) for seg in segs], (row - 0.3, 0.6),
                           facecolors="#4e79a7", edgecolor="black", linewidth=0.5, gid=f"runs:{name}")
        ends = [seg.end / DAY for seg in segs if seg.state == "NODE_FAIL"]
        bottom.scatter(ends, [row] * len(ends), marker="x", s=40, linewidths=2, color="#9d2a2c", zorder=3)
    bottom.set_yticks(range(len(lanes)), [f"{name}: ends\nday {r.end_h / 24:.1f}" for name, r in lanes], fontsize=8)
    bottom.set_ylim(len(lanes) - 0.5, -0.5)
    bottom.set_xlim(0, max(r.end_h for _, r in lanes) / 24 * 1.03)
    bottom.set_xlabel("time (days)")
    handles = [Patch(facecolor=c, edgecolor="black", label=n) for n, c in zip(names, colours)]
    handles.append(Line2D([], [], marker="x", color="#9d2a2c", linestyle="none", markersize=7, markeredgewidth=2,
                          label="a failure hits the frontier job"))
    fig.legend(handles=handles, loc="outside lower center", ncol=5, fontsize=7, frameon=False)
    top.set_title(title, fontsize=10)
    return fig


def _evaluations(first_id: int, count: int, until: float, gpus_per_node: int, seed: int = 8) -> list[TraceJob]:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(count):
        hours = float(rng.uniform(2, 6))
        jobs.append(TraceJob(first_id + i, float(rng.uniform(0, until * 0.8)), hours * 3600, (hours + 1) * 3600,
                             int(rng.integers(1, 9)), 32, gpus_per_node, user="eval"))
    return jobs


@lru_cache(maxsize=4)
def _philly(trace: str, gpus_per_node: int) -> tuple[TraceJob, ...]:
    return tuple(read_trace(trace, cores_per_node=32, gpus_per_node=gpus_per_node, limit=60000).jobs)


def _background(trace: str, gpus_per_node: int, count: int, span: float, from_day: float = 30.0) -> list[TraceJob]:
    """``count`` Philly jobs submitted over ``span`` seconds: those submitted from day
    ``from_day`` on (the log's busy months), every k-th, their times shifted to begin at 0."""
    every = _philly(trace, gpus_per_node)
    first = from_day * DAY
    window = [j for j in every if first <= j.submit < first + span]
    step = max(1, len(window) // count)
    return [replace(j, submit=j.submit - first) for j in window[::step][:count]]


def chain_plan(total_days: float, max_time_days: float = 1.0) -> tuple[int, str]:
    """How many links a run of ``total_days`` needs under a MaxTime of ``max_time_days``, and an
    ``sbatch`` line that submits the chain as an array run one task at a time."""
    links = math.ceil(total_days / max_time_days)
    hours = int(max_time_days * 24)
    time = f"{hours // 24}-{hours % 24:02d}:00:00"
    return links, f"sbatch --array=0-{links - 1}%1 --time={time} --requeue train.sbatch"


