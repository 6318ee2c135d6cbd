"""What a replay leaves behind: one record per job and one segment per run of a job.

A job that is requeued after a node failure has several runs (segments) but one record.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Segment:
    """One run of a job on concrete nodes: [start, end) and how it ended."""

    job_id: int
    start: float
    end: float
    nodes: tuple[int, ...]
    gpus: int  # total GPUs held
    cpus: int  # total CPUs held
    state: str  # COMPLETED, TIMEOUT, NODE_FAIL, ...
    lost_gpu_s: float = 0.0  # GPU-seconds of work thrown away (since the last checkpoint)


@dataclass(slots=True)
class JobRecord:
    job_id: int
    submit: float
    start: float | None  # first start
    end: float | None  # final end
    nodes: int
    gpus: int  # total GPUs per run
    cpus: int
    runtime: float  # the work the job needed, from the trace
    time_limit: float
    state: str = "PENDING"
    restarts: int = 0
    backfilled: bool = False
    segments: list[Segment] = field(default_factory=list)

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit


@dataclass
class Capacity:
    """The machine the records ran on, for utilisation."""

    nodes: int
    cpus: int
    gpus: int
