"""Failure injection: nodes that die and come back, and what a failure costs a job.

Each node fails after an exponentially distributed time with mean ``mtbf_s`` and is
repaired ``repair_s`` later (an admin resumes it, or ReturnToService brings it back).
The controller only notices after SlurmdTimeout, as in Slurm; the job's work since its
last checkpoint, and the wait for the timeout, are lost.  Seeded, so replays repeat.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class FailureModel:
    mtbf_s: float  # mean time between failures of one node
    repair_s: float = 3600.0
    seed: int = 0

    def rng(self, node: int) -> random.Random:
        return random.Random(f"{self.seed}:{node}")

    def next_failure(self, rng: random.Random) -> float:
        return rng.expovariate(1.0 / self.mtbf_s) if self.mtbf_s > 0 else math.inf


def checkpointed(progress: float, interval: float | None) -> float:
    """How much of ``progress`` seconds of work survives a crash with checkpoints every ``interval``."""
    if not interval or interval <= 0:
        return 0.0
    return math.floor(progress / interval) * interval
