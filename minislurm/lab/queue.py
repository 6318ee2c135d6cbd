"""A small pending queue ranked by priority/multifactor, with fair share from decayed usage.

This wires minislurm's pieces together the way the controller does, for a lesson: an
:class:`~minislurm.core.accounts.AssociationTree` with shares, a
:class:`~minislurm.sched.fairshare.UsageLedger` charged with past usage (which halves every
``PriorityDecayHalfLife``), the fair-share factors (Fair Tree, Slurm's default), and
:func:`minislurm.sched.priority.multifactor.factors` for every pending job.  The order is
:func:`minislurm.sched.schedule.priority_order`, the order the scheduler itself walks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from minislurm.core.accounts import parse_accounts
from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.state import ClusterState
from minislurm.sched import fairshare, priority
from minislurm.sched.priority.multifactor import Factors, factors
from minislurm.sched.schedule import priority_order

HOUR, DAY = 3600.0, 86400.0

#: Two teams: research holds 60 % of the shares, eval 40 %.
ACCOUNTS = """\
Account=research Fairshare=60
Account=eval     Fairshare=40
User=alice Account=research
User=bob   Account=research
User=carol Account=eval
"""


@dataclass(frozen=True)
class QueuedJob:
    """A pending job: who, how big, and how long ago it was submitted (hours)."""

    name: str
    user: str
    account: str
    nodes: int = 1
    gpus: int = 8
    waited_h: float = 1.0
    nice: int = 0


@dataclass(frozen=True)
class Usage:
    """GPU-hours a user burned ``days_ago`` days before now."""

    user: str
    account: str
    gpu_hours: float
    days_ago: float


@dataclass(frozen=True)
class Weights:
    """slurm.conf's PriorityWeight* (all 0 by default in Slurm) and friends."""

    age: int = 1000
    fairshare: int = 1000
    jobsize: int = 1000
    partition: int = 0
    max_age_days: float = 7.0  # PriorityMaxAge
    half_life_days: float = 7.0  # PriorityDecayHalfLife
    favor_small: bool = False  # PriorityFavorSmall
    fair_tree: bool = True  # False: PriorityFlags=NO_FAIR_TREE (classic fair share)


QUEUE = [
    QueuedJob("pretrain-7b", "alice", "research", nodes=4, gpus=8, waited_h=2),
    QueuedJob("ablation", "bob", "research", nodes=1, gpus=8, waited_h=30),
    QueuedJob("eval-suite", "carol", "eval", nodes=1, gpus=4, waited_h=1),
    QueuedJob("long-eval", "carol", "eval", nodes=2, gpus=8, waited_h=80),
]

HISTORY = [
    Usage("alice", "research", gpu_hours=3000, days_ago=10),
    Usage("bob", "research", gpu_hours=400, days_ago=1),
    Usage("carol", "eval", gpu_hours=200, days_ago=3),
]


@dataclass
class Ranked:
    """The queue in scheduling order, each job with its factors; and the fair-share table."""

    order: list[str]
    factors: dict[str, Factors]
    fairshare: dict[tuple[str, str], float]  # (account, user) -> factor in [0, 1]
    usage: dict[tuple[str, str], float]  # (account, user) -> decayed usage, GPU-hours
    shares: list[fairshare.ShareRow] = field(default_factory=list)

    def priority(self, name: str) -> int:
        return self.factors[name].priority


def rank(queue: Sequence[QueuedJob] = QUEUE, weights: Weights = Weights(),
         history: Iterable[Usage] = HISTORY, *, accounts: str = ACCOUNTS, nodes: int = 16,
         gpus_per_node: int = 8, cpus_per_node: int = 64) -> Ranked:
    """Rank ``queue`` at "now" on a ``nodes`` x ``gpus_per_node`` cluster.

    Usage is charged as Slurm charges by default, in allocated CPU-seconds: a GPU-hour costs the
    GPU's share of a node's CPUs (``cpus_per_node / gpus_per_node`` CPU-hours).
    """
    cfg = simple_cluster(nodes, cpus=cpus_per_node, gpus=gpus_per_node)
    p = cfg.priority
    p.weight_age, p.weight_fairshare = weights.age, weights.fairshare
    p.weight_jobsize, p.weight_partition = weights.jobsize, weights.partition
    p.max_age, p.decay_half_life = weights.max_age_days * DAY, weights.half_life_days * DAY
    p.favor_small = weights.favor_small
    now = 30 * DAY  # any "now" later than every event in the lesson
    tree = parse_accounts(accounts)
    ledger = fairshare.UsageLedger(tree, p.decay_half_life)
    cpus_per_gpu = cpus_per_node / gpus_per_node
    for u in sorted(history, key=lambda u: -u.days_ago):  # charge in time order
        ledger.charge(u.user, u.account, u.gpu_hours * cpus_per_gpu * HOUR, now - u.days_ago * DAY)
    for job in queue:  # every user in the queue gets an association, as Slurm requires
        tree.user(job.user, job.account)
    fs = fairshare.factors(tree, ledger, now, weights.fair_tree)
    state = ClusterState(cfg)
    by_id: dict[int, str] = {}
    for q in queue:
        cpus = max(1, round(q.gpus * cpus_per_gpu))
        job = Job(state.new_job_id(), user=q.user, account=q.account, partition="gpu", name=q.name,
                  submit_time=now - q.waited_h * HOUR, num_nodes=q.nodes,
                  shape=Shape(cpus=cpus, gpus=q.gpus), nice=q.nice, time_limit=DAY)
        state.add(job)
        by_id[job.job_id] = q.name
    state.set_priorities(priority.recompute(state, now, fs))
    ranked = {by_id[j.job_id]: factors(j, state, now, fs) for j in state.pending.values()}
    order = [by_id[j.job_id] for j in priority_order(state)]
    used = ledger.at(now)
    usage = {(a.account, a.user): used.usage(a.key) / (cpus_per_gpu * HOUR) for a in tree.users()}
    return Ranked(order, ranked, fs, usage, fairshare.share_rows(tree, ledger, now, weights.fair_tree))
