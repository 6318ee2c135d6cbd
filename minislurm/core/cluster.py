"""The cluster as slurm.conf describes it: nodes, partitions, scheduler and priority settings.

These are plain records.  :mod:`minislurm.core.slurmconf` fills them from real ``slurm.conf`` /
``gres.conf`` text; tests and the simulator may also build them directly.
Times are in seconds (``math.inf`` for INFINITE/UNLIMITED), memory in MB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from minislurm.core.spec import MAX_SCRIPT_SIZE

DAY = 86400.0


@dataclass
class NodeConfig:
    name: str
    cpus: int = 1
    real_memory: int = 1
    gpus: int = 0
    gpu_type: str | None = None
    gres: dict[str, int] = field(default_factory=dict)  # other counted GRES, e.g. {"shard": 8}
    gpu_files: list[str] = field(default_factory=list)  # from gres.conf File=, one per GPU
    weight: int = 1
    features: list[str] = field(default_factory=list)
    state: str = "UNKNOWN"


@dataclass
class PartitionConfig:
    name: str
    nodes: list[str] = field(default_factory=list)
    default: bool = False
    max_time: float = math.inf
    default_time: float | None = None
    max_nodes: float = math.inf
    state: str = "UP"  # UP, DOWN, DRAIN, INACTIVE
    priority_tier: int = 1
    priority_job_factor: int = 1
    exclusive: bool = False  # OverSubscribe=EXCLUSIVE
    allow_accounts: list[str] | None = None  # AllowAccounts (None: ALL)
    allow_groups: list[str] | None = None  # AllowGroups (None: ALL)


@dataclass
class SchedulerConfig:
    """SchedulerType plus the SchedulerParameters minislurm models.

    ``policy`` is "conservative" (Slurm's sched/backfill), "easy" (a reservation for the first
    blocked job only; not a Slurm option, kept for teaching) or "fifo" (sched/builtin).
    """

    scheduler_type: str = "sched/backfill"
    policy: str = "conservative"
    bf_interval: float = 30.0
    bf_window: float = DAY  # bf_window is configured in minutes; stored in seconds
    bf_resolution: float = 60.0
    bf_max_job_test: int = 500
    requeue_delay: float = 120.0
    max_script_size: int = MAX_SCRIPT_SIZE  # bytes: a larger batch script is refused at submission


@dataclass
class PriorityConfig:
    """PriorityType and the PriorityWeight* family (reference section 3.1)."""

    type: str = "priority/multifactor"
    weight_age: int = 0
    weight_fairshare: int = 0
    weight_jobsize: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    weight_assoc: int = 0
    decay_half_life: float = 7 * DAY
    max_age: float = 7 * DAY
    calc_period: float = 300.0
    favor_small: bool = False
    flags: set[str] = field(default_factory=set)  # e.g. {"NO_FAIR_TREE"}


@dataclass
class ClusterConfig:
    cluster_name: str = "cluster"
    nodes: list[NodeConfig] = field(default_factory=list)
    partitions: list[PartitionConfig] = field(default_factory=list)
    gres_types: set[str] = field(default_factory=set)
    sched: SchedulerConfig = field(default_factory=SchedulerConfig)
    priority: PriorityConfig = field(default_factory=PriorityConfig)
    slurmd_timeout: float = 300.0
    return_to_service: int = 0
    job_requeue: bool = True
    kill_wait: float = 30.0
    first_job_id: int = 1  # FirstJobId: the id of the cluster's first job
    inactive_limit: float = 0.0  # seconds an srun's allocation may go unheard of; 0: no limit
    def_mem_per_cpu: int | None = None
    def_mem_per_node: int | None = None
    state_save_location: str = "/var/spool/slurmctld"
    # AccountingStorageEnforce: "associations" (implied by limits, safe, qos, wckeys) refuses a
    # job without a valid association; minislurm models no limits, so the others add nothing more.
    accounting_enforce: frozenset[str] = frozenset()
    other: dict[str, str] = field(default_factory=dict)  # keys kept but not modelled
    warnings: list[str] = field(default_factory=list)
    _where: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)  # name -> index

    def partition(self, name: str | None) -> PartitionConfig | None:
        """The named partition, or the default one when ``name`` is None."""
        for part in self.partitions:
            if (part.name == name) if name else part.default:
                return part
        if name is None and self.partitions:
            return self.partitions[0]
        return None

    def node(self, name: str) -> NodeConfig | None:
        """The node named ``name``: found through an index of the names (a partition of 2,048
        nodes asks for each of them at every submission), made again when it does not match
        the list (nodes added or changed since)."""
        at = self._where.get(name)
        if at is None or at >= len(self.nodes) or self.nodes[at].name != name:
            self._where.clear()
            for i, node in enumerate(self.nodes):
                self._where.setdefault(node.name, i)
            at = self._where.get(name)
        return self.nodes[at] if at is not None else None


def simple_cluster(nodes: int, cpus: int = 32, mem: int = 256_000, gpus: int = 8,
                   prefix: str = "node", partition: str = "gpu", **sched) -> ClusterConfig:
    """A one-partition cluster of identical nodes, the shape most lessons and traces need."""
    width = max(2, len(str(nodes)))
    names = [f"{prefix}{i:0{width}d}" for i in range(1, nodes + 1)]
    return ClusterConfig(
        nodes=[NodeConfig(n, cpus=cpus, real_memory=mem, gpus=gpus, state="IDLE") for n in names],
        partitions=[PartitionConfig(partition, nodes=names, default=True)],
        gres_types={"gpu"} if gpus else set(),
        sched=SchedulerConfig(**sched),
    )
