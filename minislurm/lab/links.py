"""A long run's chain of links, submitted live with the learner's options (lab 8b, exercise 3).

The partition gets the run's ``MaxTime``; each link is a job that ends at once, standing for
one that trains until its time limit after spending its first hours loading the checkpoint.
What the controller did with the options (an array or not, each task's time limit, whether the
tasks ran one at a time, whether one waits for ever with ``PartitionTimeLimit``) is read from
its records, so the check judges the chain Slurm made, not the words of the options.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from minislurm.core.timefmt import format_elapsed

STUCK = ("PartitionTimeLimit", "PartitionNodeLimit", "DependencyNeverSatisfied", "JobHeldUser")


@dataclass
class Link:
    index: int | None  # the array task id; None for a job that is no array
    state: str
    reason: str
    limit_h: float | None  # the time limit the controller gave it
    start: float | None
    end: float | None


@dataclass
class Chain:
    refused: str  # sbatch's message when it refused the options, else ""
    links: list[Link]
    max_time: str  # the partition's MaxTime as scontrol writes it

    def stuck(self) -> Link | None:
        """A link that waits with a reason that never ends by itself."""
        return next((k for k in self.links if k.state == "PENDING" and k.reason in STUCK), None)

    def overlapping(self) -> tuple[Link, Link] | None:
        """Two links that ran at the same time."""
        ran = sorted((k for k in self.links if k.start is not None), key=lambda k: k.start)
        return next(((a, b) for a, b in zip(ran, ran[1:]) if a.end is None or b.start < a.end), None)

    def trained_h(self, startup_h: float) -> float:
        """The hours of training the links that completed would do, each losing ``startup_h``."""
        return sum(max(0.0, k.limit_h - startup_h) for k in self.links
                   if k.state == "COMPLETED" and k.limit_h is not None)


def run_chain(options: list[str], max_time_h: float, *, timeout: float = 120) -> Chain:
    """Submit ``sbatch OPTIONS link.sh`` to a fresh cluster whose partition's MaxTime is
    ``max_time_h`` hours; wait until every link ended or one waits for ever."""
    from minislurm.lab.terminal import lab_cluster

    max_time = format_elapsed(round(max_time_h * 3600))
    with lab_cluster(nodes=1, gpus_per_node=1, quiet=True) as sh:
        sh(f"scontrol update PartitionName=gpu MaxTime={max_time}", show=False)
        sh.write("link.sh", "#!/bin/bash\nsleep 0.2\n", show=False)
        out = sh("sbatch " + " ".join(map(shlex.quote, options)) + " link.sh", show=False)
        if not out or "Submitted batch job" not in out:
            return Chain(sh.last.stderr.strip() or "no job id", [], max_time)
        job = int(out.split()[-1])

        def now() -> Chain:
            jobs = sh.api.call("GET", "/jobs", query={"ids": str(job)})["jobs"]
            mine = [j for j in jobs if j.get("array_job_id") == job] or [sh.job(job)]
            links = [Link(j.get("array_task_id"), j["state"], j["reason"] or "None",
                          j["time_limit"] / 3600 if j.get("time_limit") else None,
                          j.get("start_time"), j.get("end_time")) for j in mine]
            return Chain("", sorted(links, key=lambda k: (k.index is None, k.index or 0)), max_time)

        sh.until(lambda: (c := now()).stuck() or all(k.state not in ("PENDING", "RUNNING") for k in c.links),
                 timeout=timeout, what="every link to end")
        return now()
