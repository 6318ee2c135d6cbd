"""What the controller keeps about a job's current run besides the job itself, in one object,
so that a run that ends is forgotten in one step (before, four dicts keyed by job id had to be
cleaned together): its steps, its timers, when its srun was last heard, whether its agents
have been told to stop it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass(eq=False)
class Run:
    incarnation: int  # the job's restart count for this run
    steps: dict[int, dict] = field(default_factory=dict)  # step id -> record (saved in the store)
    timers: list[asyncio.TimerHandle] = field(default_factory=list)  # time limit, --signal
    srun_heard: float | None = None  # an srun allocation: when its srun was last heard (InactiveLimit)
    stop_delivered: bool = False  # its agents have its stop (Live.ending)
    stop_held: bool = False  # its stop is told by whoever decided it, once saved (and answered)
    batch_usage: dict | None = None  # what its batch script used (slurmd's usage.Meter), for sacct
    pending_steps: list[dict] = field(default_factory=list)  # step requests waiting for busy CPUs or GPUs

    def disarm(self) -> None:
        for handle in self.timers:
            handle.cancel()
        self.timers.clear()
