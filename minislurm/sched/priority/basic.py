"""priority/basic: first in, first out.

Each new job gets one less than the job before it, starting just below Slurm's top
priority (0xffff0000), adjusted by ``--nice``; never below 1.  An array's tasks all get the array's (they are one
job when submitted), so they start in index order.
"""

from __future__ import annotations

from minislurm.core.job import Job

TOP_PRIORITY = 0xFFFF0000


def priority(job: Job) -> int:
    return max(1, TOP_PRIORITY - job.shown_id - job.nice)
