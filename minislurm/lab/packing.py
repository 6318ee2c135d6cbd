"""GPU packing on a small cluster: where select/cons_tres puts jobs, and which free GPUs are stranded.

:func:`pack` submits a list of GPU jobs at one instant, the way ``sbatch -N n
--ntasks-per-node=g --gres=gpu:g`` would (one task per GPU, the data-parallel convention),
through minislurm's real submission checks (:func:`minislurm.sched.submit.build_jobs`), gives
them their ``priority/multifactor`` priority, and runs one scheduling pass
(:func:`minislurm.sched.schedule.schedule`: the main scheduler, then backfill).  Nothing in this
module chooses a node or a GPU; it only reads what the pass decided.

*Stranded* GPUs are free GPUs that a job of a given size cannot use: a node with 3 free GPUs
can hold no 4-GPU job, and its 3 GPUs idle while such a job waits (fragmentation).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from minislurm.core.cluster import ClusterConfig, NodeConfig, PartitionConfig, PriorityConfig
from minislurm.core.errors import SlurmError
from minislurm.core.options import parse_options
from minislurm.core.state import ClusterState
from minislurm.sched import priority
from minislurm.sched.apply import apply
from minislurm.sched.schedule import schedule
from minislurm.sched.submit import build_jobs

ORDERS = ("submit", "largest")
LIMIT_MIN = 60  # every job asks for an hour, so the order of the queue is the only difference


@dataclass(frozen=True)
class PackJob:
    """A job of ``nodes`` nodes with ``gpus`` GPUs (and one task per GPU) on each."""

    name: str
    gpus: int
    nodes: int = 1

    @property
    def total(self) -> int:
        return self.gpus * self.nodes

    def sbatch_args(self) -> list[str]:
        return ["-J", self.name, "-N", str(self.nodes), f"--ntasks-per-node={self.gpus}",
                f"--gres=gpu:{self.gpus}", "-t", str(LIMIT_MIN)]


@dataclass(frozen=True)
class Placement:
    job: PackJob
    job_id: int
    nodes: tuple[str, ...]
    gpus: tuple[tuple[int, ...], ...]  # per node, the GPU indices (as in CUDA_VISIBLE_DEVICES)
    backfilled: bool


@dataclass
class PackResult:
    node_names: list[str]
    capacity: list[int]  # GPUs per node
    jobs: list[PackJob]
    order: str
    placed: dict[str, Placement] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)  # job name -> squeue's reason
    rejected: dict[str, str] = field(default_factory=dict)  # job name -> sbatch's error
    owner: list[list[str | None]] = field(default_factory=list)  # [node][gpu] -> job name

    @property
    def free(self) -> list[int]:
        """Free GPUs per node."""
        return [sum(o is None for o in row) for row in self.owner]

    @property
    def total_gpus(self) -> int:
        return sum(self.capacity)

    @property
    def busy(self) -> int:
        return self.total_gpus - sum(self.free)

    def fits(self, want: int) -> int:
        """How many one-node jobs of ``want`` GPUs could start now, side by side."""
        return sum(f // want for f in self.free) if want > 0 else 0

    def stranded(self, want: int) -> int:
        """Free GPUs left over once as many ``want``-GPU one-node jobs as possible are placed."""
        return sum(self.free) - self.fits(want) * want

    def stranded_cells(self, want: int) -> set[tuple[int, int]]:
        """(node, gpu) of the stranded GPUs: on each node, the free ones past the last whole job."""
        cells: set[tuple[int, int]] = set()
        for n, row in enumerate(self.owner):
            free = [g for g, o in enumerate(row) if o is None]
            keep = (len(free) // want) * want if want > 0 else 0
            cells.update((n, g) for g in free[keep:])
        return cells

    @property
    def first_pending(self) -> PackJob | None:
        """The first job in queue order that did not start (the one that got ``Resources``)."""
        for name, reason in self.pending.items():
            if reason == "Resources":
                return next(j for j in self.jobs if j.name == name)
        return next((j for j in self.jobs if j.name in self.pending), None)


def _sizes(text: str, what: str, example: str):
    """``(count, gpus, part)`` for each ``"N"`` or ``"CxN"`` item of a comma-separated list."""
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        m = re.fullmatch(r"(?:(\d+)\s*[x*])?(\d+)", part)
        if not m:
            raise ValueError(f"cannot read {what} size {part!r}: write GPUs per {what}, e.g. {example}")
        yield int(m.group(1) or 1), int(m.group(2)), part


def parse_nodes(text: str) -> list[int]:
    """GPUs per node: ``"8,8,4"``, or ``"4x8"`` for four 8-GPU nodes, or a mix (``"2x8,4"``)."""
    out: list[int] = []
    for count, gpus, part in _sizes(text, "node", "8,8,4 or 3x8"):
        if not 1 <= gpus <= 16 or not 1 <= count <= 16:
            raise ValueError(f"node size {part!r}: 1 to 16 GPUs per node, at most 16 nodes of a size")
        out += [gpus] * count
    if not out or len(out) > 16:
        raise ValueError("give between 1 and 16 nodes")
    return out


def parse_jobs(text: str) -> list[PackJob]:
    """Jobs in submission order: ``"3,2,4"`` (GPUs on one node) or ``"2x4"`` (2 nodes x 4 GPUs)."""
    out: list[PackJob] = []
    for nodes, gpus, part in _sizes(text, "job", "4 or 2x8"):
        if gpus < 1 or nodes < 1:
            raise ValueError(f"job size {part!r}: at least one node and one GPU")
        out.append(PackJob(f"j{len(out) + 1}", gpus, nodes))
    if len(out) > 40:
        raise ValueError("at most 40 jobs")
    return out


def cluster_config(capacity: Sequence[int], *, order: str = "submit", cpus_per_node: int = 64) -> ClusterConfig:
    """Nodes ``gpu01``... with the given GPU counts, one partition; ``order="largest"`` sets
    ``PriorityWeightJobSize`` so bigger jobs are considered first (Slurm's default weights are 0)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    names = [f"gpu{i:02d}" for i in range(1, len(capacity) + 1)]
    return ClusterConfig(
        cluster_name="packing",
        nodes=[NodeConfig(n, cpus=cpus_per_node, real_memory=512_000, gpus=g, state="IDLE")
               for n, g in zip(names, capacity)],
        partitions=[PartitionConfig("gpu", nodes=names, default=True)],
        gres_types={"gpu"},
        priority=PriorityConfig(weight_jobsize=10000 if order == "largest" else 0),
    )


def pack(capacity: Sequence[int], jobs: Sequence[PackJob], *, order: str = "submit") -> PackResult:
    """Submit ``jobs`` (in list order) to nodes of ``capacity`` GPUs and run one scheduling pass."""
    state = ClusterState(cluster_config(capacity, order=order))
    result = PackResult(list(state.nodes.names), list(capacity), list(jobs), order,
                        owner=[[None] * g for g in capacity])
    by_id: dict[int, PackJob] = {}
    for pj in jobs:
        spec, _ = parse_options(pj.sbatch_args(), prog="sbatch", now=0.0)
        try:
            (job,) = build_jobs(spec, state, first_id=state.next_job_id, user="user", now=0.0)
            state.used_job_ids(job.job_id)
        except SlurmError as err:
            result.rejected[pj.name] = err.message
            continue
        job.priority = priority.initial(job, state, 0.0)
        state.add(job)
        by_id[job.job_id] = pj
    for s in apply(state, schedule(state, 0.0, every_reason=True)).started:
        pj, alloc = by_id[s.key], s.job.alloc
        nodes = tuple(state.nodes.names[n] for n in alloc.nodes)
        result.placed[pj.name] = Placement(pj, s.job.job_id, nodes, alloc.gpus, s.backfilled)
        for n, gpus in zip(alloc.nodes, alloc.gpus):
            for g in gpus:
                result.owner[n][g] = pj.name
    queue = sorted(state.pending.values(), key=lambda j: (-j.priority, j.submit_time, j.job_id))
    for job in queue:
        result.pending[by_id[job.job_id].name] = job.reason
    return result
