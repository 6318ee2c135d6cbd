"""Failure injection: nodes that die and come back, and what a failure costs a job.

A node runs for an *up-time*, fails, and is repaired ``repair_s`` later (an admin resumes it,
or ReturnToService brings it back); then its clock starts again.  The controller only notices
a failure after SlurmdTimeout, as in Slurm; the job's work since its last checkpoint, and the
wait for the timeout, are lost.  Seeded, so replays repeat.

Up-times are Weibull with shape ``shape`` (k) and mean ``mtbf_s``: k = 1 is the exponential
(memoryless: a node is as likely to fail in its first hour back as in its hundredth); k < 1 is
infant mortality -- a node is likeliest to fail soon after it (re)starts, so failures come in
bursts; k > 1 is wear-out.  Because each repair restarts the clock, a node's chance of failing
depends on its history: with k < 1, a node just back from repair is the one to watch.

*Lemons* are the few nodes that fail far more often than the rest, again and again after each
repair (a fault the diagnostics do not catch): a share ``lemon_fraction`` of nodes, drawn per
node from the seed, whose up-times are ``lemon_factor`` times shorter.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from itertools import takewhile
from dataclasses import dataclass


@dataclass(frozen=True)
class FailureModel:
    mtbf_s: float  # mean up-time of one (healthy) node: its mean time between failures
    repair_s: float = 3600.0
    seed: int = 0
    shape: float = 1.0  # Weibull k: 1 exponential, < 1 infant mortality and bursts, > 1 wear-out
    lemon_fraction: float = 0.0  # share of nodes that are lemons
    lemon_factor: float = 10.0  # a lemon's mean up-time is mtbf_s / lemon_factor
    until: float = math.inf  # no failure from this time on: failures in a window (a reservation's)

    def __post_init__(self) -> None:
        if self.shape <= 0 or self.repair_s < 0 or not 0 <= self.lemon_fraction <= 1 or self.lemon_factor < 1:
            raise ValueError("shape must be positive, repair_s not negative, lemon_fraction in [0, 1] "
                             "and lemon_factor at least 1")

    def is_lemon(self, node: int) -> bool:
        """Whether ``node`` is a lemon: its own draw, apart from its up-times' stream."""
        return self.lemon_fraction > 0 and random.Random(f"{self.seed}:lemon:{node}").random() < self.lemon_fraction

    def mean_uptime(self, node: int) -> float:
        return self.mtbf_s / self.lemon_factor if self.is_lemon(node) else self.mtbf_s

    def scale(self, mean: float) -> float:
        """The Weibull scale (lambda) whose mean is ``mean``: mean = lambda x Gamma(1 + 1/k)."""
        return mean / math.gamma(1.0 + 1.0 / self.shape)

    def uptimes(self, node: int) -> Iterator[float]:
        """The seconds ``node`` runs before each of its failures, the first from t=0 and each
        later one from its return, none from ``until`` on; none if it never fails (``mtbf_s`` 0)."""
        return (uptime for uptime, _ in self._lives(node))

    def failure_times(self, node: int, until: float) -> list[float]:
        """When ``node`` fails before ``until``, each repair taking ``repair_s``: the times the
        simulator kills it, read without a simulation (it brings a node back no sooner than it
        has noticed it died, SlurmdTimeout after the failure)."""
        return [failed for _, failed in takewhile(lambda life: life[1] < until, self._lives(node))]

    def _lives(self, node: int) -> Iterator[tuple[float, float]]:
        """(up-time, when it ends in a failure), each from the node's return after the last."""
        now = 0.0
        for uptime in self._draws(node):
            now += uptime
            if now >= self.until:
                return
            yield uptime, now
            now += self.repair_s

    def _draws(self, node: int) -> Iterator[float]:
        if self.mtbf_s <= 0:
            return
        rng, mean = random.Random(f"{self.seed}:{node}"), self.mean_uptime(node)
        if self.shape == 1.0:  # the exponential's own draw: the same stream as ever for a seed
            while True:
                yield rng.expovariate(1.0 / mean)
        scale = self.scale(mean)
        while True:
            yield rng.weibullvariate(scale, self.shape)


def checkpointed(progress: float, interval: float | None, cost: float = 0.0) -> float:
    """How much of the work survives a crash ``progress`` seconds into a run that checkpoints
    after every ``interval`` seconds of work, each checkpoint taking ``cost`` seconds to write:
    the work of the checkpoints written in full."""
    if not interval or interval <= 0:
        return 0.0
    return math.floor(progress / (interval + cost)) * interval


def wall_time(work: float, interval: float | None, cost: float = 0.0) -> float:
    """The seconds a run takes to do ``work`` seconds of work, writing a checkpoint (``cost``
    seconds) after every ``interval`` seconds of it."""
    if not interval or interval <= 0 or cost <= 0:
        return work
    return work + math.floor(work / interval) * cost
