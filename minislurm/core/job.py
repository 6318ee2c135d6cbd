"""A job as the scheduler sees it: what it asks for, where it is in its life, what it holds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from minislurm.core.deps import Dependency
from minislurm.core.states import JobState, Reason

# An array's tasks still pending in its one record (Slurm's meta job) have no job id of their
# own yet: each is kept under a negative key, unique per (array id, task index), until it starts
# and takes a real id (see ClusterState.start).  Task indices are below MaxArraySize's ceiling.
_TASK_KEYS = 4_000_001


def task_key(array_job_id: int, index: int) -> int:
    """The key of task ``index`` of array ``array_job_id`` while it has no id of its own."""
    return -(array_job_id * _TASK_KEYS + index + 1)


@dataclass(frozen=True, slots=True)
class Shape:
    """What a job needs from *each* of its nodes (Slurm's ``--gres`` and ``--mem`` are per node).

    ``mem == -1`` means all of the node's memory (``--mem=0``).  ``cpus`` and ``mem`` are what
    every node must have free; a job with ``tasks`` to lay out gets them by filling its nodes in
    order (:func:`minislurm.core.layout.fill`), so a node may get more: ``cpus_per_task`` for
    each task it takes, ``mem_per_cpu`` for each of those CPUs when memory is asked per CPU, and
    at most ``max_tasks_per_node`` tasks (``--ntasks-per-node`` beside ``-n``; 0: no cap).
    """

    cpus: int = 1
    mem: int = 0
    gpus: int = 0
    gpu_type: str | None = None
    tasks: int = 0
    cpus_per_task: int = 1
    mem_per_cpu: int = 0
    max_tasks_per_node: int = 0


@dataclass(frozen=True, slots=True)
class Allocation:
    """Concrete resources: node indices and, per node, CPUs, memory and the GPU indices chosen."""

    nodes: tuple[int, ...]
    cpus: tuple[int, ...]
    mem: tuple[int, ...]
    gpus: tuple[tuple[int, ...], ...]

    @property
    def num_gpus(self) -> int:
        return sum(len(g) for g in self.gpus)

    @property
    def num_cpus(self) -> int:
        return sum(self.cpus)


@dataclass(slots=True, eq=False)
class Job:
    job_id: int
    user: str = "user"
    account: str = "default"
    partition: str = ""
    name: str = "job"
    submit_time: float = 0.0
    time_limit: float = math.inf  # seconds
    num_nodes: int = 1
    shape: Shape = field(default_factory=Shape)
    exclusive: bool = False
    ntasks: int | None = None
    nice: int = 0
    hold: str | None = None  # "user" or "admin"
    begin_time: float = 0.0
    dependency: Dependency | None = None
    array_job_id: int | None = None
    array_task_id: int | None = None
    array_max_running: int | None = None
    # A component of a heterogeneous job: the leader's id and this component's place (0 is the
    # leader); each component is a job of its own, id het_job_id + het_job_offset.
    het_job_id: int | None = None
    het_job_offset: int | None = None
    req_nodes: frozenset[str] = frozenset()
    exc_nodes: frozenset[str] = frozenset()
    reservation: str | None = None
    requeue: bool = True
    fixed_priority: int | None = None  # an operator's --priority: kept, never recomputed
    # life cycle
    state: JobState = JobState.PENDING
    reason: str = Reason.NONE
    priority: int = 0
    start_time: float | None = None
    end_time: float | None = None
    alloc: Allocation | None = None
    restart_count: int = 0
    # The dependency can never be met (DependencyNeverSatisfied), kept even if a target is
    # requeued; set by ClusterState.settle_dependencies, as slurmctld marks DEPEND_FAILED.
    dependency_failed: bool = False
    kill_on_invalid_dep: bool = False  # --kill-on-invalid-dep=yes: cancelled once its dependency fails
    exit_code: int = 0  # the job's exit code, 0-255
    exit_signal: int = 0  # the signal that ended it, 0 if none (sacct's ExitCode is "code:signal")
    spec: object = None  # the parsed request (a JobSpec) the job came from, when there is one

    @property
    def pending(self) -> bool:
        return self.state is JobState.PENDING

    @property
    def shown_id(self) -> int:
        """The job id Slurm shows: a task still in its array's record shows the array's id."""
        return self.job_id if self.job_id >= 0 else self.array_job_id

    @property
    def order_id(self) -> float:
        """The last tie-break of the queue order: the job id; for a task still in its array's
        record, a number between the array's id and the next (Slurm walks that record's tasks
        in index order).  Exact: ids are below 2**26 and the fraction needs 22 bits."""
        if self.job_id >= 0:
            return self.job_id
        return self.array_job_id + (self.array_task_id + 1) / (_TASK_KEYS + 1)

    @property
    def display_id(self) -> str:
        """``123``, ``120_3`` for an array task or ``130+1`` for a heterogeneous job's
        component, the way squeue names it."""
        if self.het_job_id is not None:
            return f"{self.het_job_id}+{self.het_job_offset}"
        if self.array_job_id is not None and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.job_id)
