"""Failures as published training runs saw them, and the checkpoint interval that pays (chapter 8).

* :data:`PUBLISHED`: the interruptions three published training runs reported, and the mean
  time between failures (MTBF) of a node and of a GPU they imply when every interruption is
  counted against the run's nodes (the book cites each source).
* :func:`llama3_failures`: the simulator's failure model at Llama 3's per-node rate, with
  bursts (Weibull k < 1) or lemons if asked, keeping the cluster's average rate the published one.
* :func:`frontier_run`: a 2,048-node x 8-GPU cluster and one long run on 2,000 of its nodes
  (the rest are spares), checkpointing every interval of work at a cost per checkpoint,
  replayed by the simulator; its goodput is useful work over elapsed time.
* :func:`goodput_model`: the first-order model of the same run whose optimum is Young's
  interval, sqrt(2 x cost x MTBF of the job) (:func:`~minislurm.lab.replays.young_daly`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from minislurm.core.cluster import ClusterConfig, simple_cluster
from minislurm.sim.engine import Simulator
from minislurm.sim.failures import FailureModel
from minislurm.sim.traces import TraceJob

HOUR, DAY = 3600.0, 86400.0


@dataclass(frozen=True)
class PublishedRun:
    """What one training run reported: ``interruptions`` in ``days`` on ``gpus`` GPUs."""

    name: str
    interruptions: float
    days: float
    gpus: int
    gpus_per_node: int = 8

    @property
    def nodes(self) -> int:
        return self.gpus // self.gpus_per_node

    @property
    def job_mtbf_h(self) -> float:
        return self.days * 24 / self.interruptions

    @property
    def node_mtbf_h(self) -> float:
        """A job on n nodes fails n times as often as one node: a node's MTBF is n times the job's."""
        return self.job_mtbf_h * self.nodes

    @property
    def gpu_mtbf_h(self) -> float:
        return self.job_mtbf_h * self.gpus


# Meta, "The Llama 3 Herd of Models" (2024), section 3.3.4: 419 unexpected interruptions in a
# 54-day snapshot of pre-training on 16,384 H100 GPUs.
LLAMA3 = PublishedRun("Llama 3 405B", 419, 54, 16_384)
# Zhang et al., "OPT: Open Pre-trained Transformer Language Models" (2022), section 2.5: hardware
# failures caused at least 35 manual restarts, and an estimated 70+ automatic ones, over about
# two months on 992 A100 GPUs.
OPT = PublishedRun("OPT-175B", 35 + 70, 60, 992)
# BigScience, "The Technology Behind BLOOM Training" (2022): 1-2 GPU failures a week on the
# 384 A100 GPUs (48 nodes) of the training run.
BLOOM = PublishedRun("BLOOM-176B", 1.5, 7, 384)
PUBLISHED = (LLAMA3, OPT, BLOOM)


def llama3_failures(*, shape: float = 1.0, lemon_fraction: float = 0.0, lemon_factor: float = 10.0,
                    node_mtbf_h: float = LLAMA3.node_mtbf_h, repair_h: float = 4.0, seed: int = 0) -> FailureModel:
    """Node failures at ``node_mtbf_h`` (Llama 3's per-node rate) on average over the cluster.

    With lemons the healthy nodes' MTBF is raised so that the average rate stays the same: the
    lemons take their share of the published failures rather than adding to them.  Every node
    starts new at t=0, so with ``shape`` < 1 the run begins in its infant-mortality phase and
    sees more failures in its first weeks than the long-run rate (a young cluster).
    """
    healthy = node_mtbf_h * ((1 - lemon_fraction) + lemon_fraction * lemon_factor)
    return FailureModel(healthy * HOUR, repair_h * HOUR, seed, shape=shape, lemon_fraction=lemon_fraction,
                        lemon_factor=lemon_factor)


@dataclass(frozen=True)
class FrontierRun:
    interval_s: float
    cost_s: float
    work_s: float  # the run's useful work: how long it would take with no failures and no checkpoints
    elapsed_s: float  # from submission to its end, failures, restarts and checkpoints included
    interruptions: int  # runs of it ended by a node failure
    # what each failure costs besides the lost work: Slurm notices the dead node after
    # SlurmdTimeout, and the requeued job may start again after the requeue delay (and a second)
    restart_s: float

    @property
    def goodput(self) -> float:
        return self.work_s / self.elapsed_s


def _cluster(nodes: int, gpus_per_node: int) -> ClusterConfig:
    cfg = simple_cluster(nodes, cpus=32, mem=1, gpus=gpus_per_node)
    cfg.sched.policy, cfg.priority.type = "conservative", "priority/basic"
    return cfg


@lru_cache(maxsize=64)
def frontier_run(interval_s: float, cost_s: float, *, failures: FailureModel | None = None, nodes: int = 2048,
                 job_nodes: int = 2000, gpus_per_node: int = 8, work_days: float = 54.0) -> FrontierRun:
    """One ``sbatch --requeue`` run of ``job_nodes`` nodes doing ``work_days`` of work on a
    ``nodes``-node cluster, writing a checkpoint (``cost_s`` seconds) after every
    ``interval_s`` seconds of work, under ``failures`` (Llama 3's rate by default)."""
    failures = failures or llama3_failures()
    work = work_days * DAY
    run = TraceJob(1, 0.0, work, 100 * work, job_nodes, 32, gpus_per_node)
    sim = Simulator(_cluster(nodes, gpus_per_node), [run], failures=failures, checkpoint_interval=interval_s,
                    checkpoint_cost=cost_s)
    records = sim.run()
    if not records:
        raise ValueError(f"the run cannot start: {sim.rejected[0][1]}")
    cfg = sim.state.config
    delay = cfg.sched.requeue_delay + (1 if cfg.sched.requeue_delay else 0)  # as ClusterState.requeue sets it
    return FrontierRun(interval_s, cost_s, work, records[0].end - records[0].submit, records[0].restarts,
                       cfg.slurmd_timeout + delay)


def goodput_sweep(intervals: Iterable[float], cost_s: float, **run) -> list[FrontierRun]:
    """:func:`frontier_run` at each interval; every one sees the same node failures (one seed)."""
    return [frontier_run(float(i), float(cost_s), **run) for i in sorted(set(intervals))]


def goodput_model(interval_s: float, cost_s: float, job_mtbf_s: float, restart: float) -> float:
    """First-order goodput: a share interval / (interval + cost) of the run's time is work, and
    each failure (one per ``job_mtbf_s``) throws away half a cycle and the ``restart``.
    Maximising it (cost and restart small against the MTBF) gives Young's interval."""
    cycle = interval_s + cost_s
    return interval_s / cycle * max(0.0, 1 - (cycle / 2 + restart) / job_mtbf_s)
