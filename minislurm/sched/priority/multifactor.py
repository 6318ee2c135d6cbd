"""priority/multifactor: a weighted sum of factors in [0, 1], minus nice.

    priority = PriorityWeightAge       * age
             + PriorityWeightFairshare * fair-share
             + PriorityWeightJobSize   * job size
             + PriorityWeightPartition * partition
             + PriorityWeightQOS * 0 + PriorityWeightAssoc * 0   (no QOS/association priorities)
             - nice

Every weight defaults to 0, so an unconfigured cluster orders jobs by submit time and id.
The result is the sum truncated to an integer in 1..0xffffffff (0 is kept for held jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

from minislurm.core.job import Job
from minislurm.core.state import ClusterState

MAX_PRIORITY = 0xFFFFFFFF  # priorities are uint32


@dataclass(frozen=True)
class Factors:
    """What ``sprio`` shows for one job: the weighted factors and their sum."""

    job_id: int
    user: str
    account: str
    partition: str
    age: float
    fairshare: float
    jobsize: float
    part: float
    nice: int
    priority: int


def factors(job: Job, state: ClusterState, now: float, fairshare: dict | None = None) -> Factors:
    cfg = state.config.priority
    nodes = state.nodes
    eligible_since = max(job.submit_time, job.begin_time)
    age = min(max(now - eligible_since, 0.0) / cfg.max_age, 1.0) if cfg.max_age else 0.0
    total_nodes, total_cpus = len(nodes) or 1, int(nodes.cap_cpu.sum()) or 1
    cpus = job.num_nodes * job.shape.cpus
    if cfg.favor_small:
        size = ((total_nodes - job.num_nodes) / total_nodes + (total_cpus - cpus) / total_cpus) / 2
    else:
        size = (job.num_nodes / total_nodes + cpus / total_cpus) / 2
    size = min(max(size, 0.0), 1.0)
    top = max((p.priority_job_factor for p in state.partitions.values()), default=1) or 1
    part_cfg = state.partitions.get(job.partition)
    part = (part_cfg.priority_job_factor / top) if part_cfg else 0.0
    fs = (fairshare or {}).get((job.account, job.user), 0.0)
    w_age, w_fs = cfg.weight_age * age, cfg.weight_fairshare * fs
    w_size, w_part = cfg.weight_jobsize * size, cfg.weight_partition * part
    # Slurm sums the weighted factors minus nice as a double, clamps it to at least 1, caps it
    # at 0xffffffff and casts it to an integer: the fraction is truncated, not rounded.
    total = w_age + w_fs + w_size + w_part - job.nice
    prio = int(min(max(total, 1.0), float(MAX_PRIORITY)))
    return Factors(job.job_id, job.user, job.account, job.partition,
                   w_age, w_fs, w_size, w_part, job.nice, prio)


def priority(job: Job, state: ClusterState, now: float, fairshare: dict | None = None) -> int:
    return factors(job, state, now, fairshare).priority
