"""What ``sdiag`` reports: the controller's counters since its start or the last ``sdiag --reset``.

Jobs submitted, started and ended (completed, cancelled, failed to launch), each scheduling
cycle's time, depth and queue length (main and backfill), and every request by the Slurm RPC it
stands for (``REQUEST_SUBMIT_BATCH_JOB``: ``sbatch``) and by user, with its time.  The RPC names
and numbers are those Slurm 22.05's sdiag prints for the same commands (seen on the twin).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minislurm.core.states import JobState

# A route of the controller's API -> the Slurm RPC the same command sends to slurmctld.
RPCS: dict[tuple[str, str], tuple[str, int]] = {
    ("POST", "/agents/register"): ("MESSAGE_NODE_REGISTRATION_STATUS", 1002),
    ("GET", "/ping"): ("REQUEST_PING", 1008),
    ("GET", "/config"): ("REQUEST_BUILD_INFO", 2001),
    ("GET", "/jobs"): ("REQUEST_JOB_INFO", 2003),
    ("GET", "/nodes"): ("REQUEST_NODE_INFO", 2007),
    ("GET", "/partitions"): ("REQUEST_PARTITION_INFO", 2009),
    ("GET", "/jobs/{job_id}"): ("REQUEST_JOB_INFO_SINGLE", 2021),
    ("GET", "/jobs/{job_id}/wait"): ("REQUEST_JOB_INFO_SINGLE", 2021),
    ("GET", "/shares"): ("REQUEST_SHARE_INFO", 2022),
    ("GET", "/reservations"): ("REQUEST_RESERVATION_INFO", 2024),
    ("GET", "/priorities"): ("REQUEST_PRIORITY_FACTORS", 2026),
    ("GET", "/diag"): ("REQUEST_STATS_INFO", 2035),
    ("POST", "/diag/reset"): ("REQUEST_STATS_INFO", 2035),
    ("POST", "/jobs/{job_id}/update"): ("REQUEST_UPDATE_JOB", 3001),
    ("POST", "/jobs/{job_id}/hold"): ("REQUEST_UPDATE_JOB", 3001),
    ("POST", "/jobs/{job_id}/release"): ("REQUEST_UPDATE_JOB", 3001),
    ("POST", "/nodes/update"): ("REQUEST_UPDATE_NODE", 3002),
    ("POST", "/partitions/update"): ("REQUEST_UPDATE_PARTITION", 3005),
    ("POST", "/reservations"): ("REQUEST_CREATE_RESERVATION", 3006),
    ("DELETE", "/reservations/{name}"): ("REQUEST_DELETE_RESERVATION", 3008),
    ("POST", "/reservations/{name}"): ("REQUEST_UPDATE_RESERVATION", 3009),
    ("POST", "/jobs"): ("REQUEST_SUBMIT_BATCH_JOB", 4003),  # an allocation's: ALLOCATION below
    ("POST", "/jobs/{job_id}/alive"): ("REQUEST_JOB_READY", 4019),
    ("POST", "/jobs/{job_id}/steps"): ("REQUEST_JOB_STEP_CREATE", 5001),
    ("POST", "/jobs/{job_id}/steps/{step_id}/complete"): ("REQUEST_STEP_COMPLETE", 5016),
    ("POST", "/jobs/{job_id}/complete"): ("REQUEST_COMPLETE_JOB_ALLOCATION", 5017),
    ("POST", "/agents/job-ended"): ("REQUEST_COMPLETE_BATCH_SCRIPT", 5018),
    ("POST", "/jobs/{job_id}/requeue"): ("REQUEST_JOB_REQUEUE", 5023),
    ("POST", "/jobs/{job_id}/cancel"): ("REQUEST_KILL_JOB", 5032),
}
ALLOCATION = ("REQUEST_RESOURCE_ALLOCATION", 4001)  # POST /jobs from srun or salloc


@dataclass
class Cycles:
    """One scheduler's cycles: how many, how long (microseconds), how deep, how long the queue."""

    count: int = 0
    total_us: int = 0
    last_us: int = 0
    max_us: int = 0
    depth_total: int = 0
    last_depth: int = 0
    queue_total: int = 0
    last_queue: int = 0
    last_when: float | None = None

    def add(self, us: int, depth: int, queue: int, when: float) -> None:
        self.count += 1
        self.total_us += us
        self.last_us, self.max_us = us, max(self.max_us, us)
        self.depth_total += depth
        self.last_depth = depth
        self.queue_total += queue
        self.last_queue = queue
        self.last_when = when


@dataclass
class Stats:
    since: float
    submitted: int = 0
    started: int = 0
    completed: int = 0
    canceled: int = 0
    failed: int = 0
    main: Cycles = field(default_factory=Cycles)
    backfill: Cycles = field(default_factory=Cycles)
    backfilled: int = 0  # jobs started by backfill since the last reset
    backfilled_ever: int = 0  # ... since the controller started
    table_total: int = 0
    last_table: int = 0
    by_type: dict[tuple[str, int], list[int]] = field(default_factory=dict)  # -> [count, total us]
    by_user: dict[str, list[int]] = field(default_factory=dict)
    serving: int = 0  # requests being served now (sdiag's server thread count)

    def reset(self, now: float) -> None:
        """``sdiag --reset``: every counter from zero, but the backfilled jobs since the start
        and when the last backfill cycle ran (as Slurm keeps them)."""
        ever, serving, when = self.backfilled_ever, self.serving, self.backfill.last_when
        self.__init__(now)
        self.backfilled_ever, self.serving, self.backfill.last_when = ever, serving, when

    def ended(self, final: JobState, launch_failed: bool = False) -> None:
        """A job ended: a cancelled one counts canceled; one that could not be launched (or
        died with its node) failed; any other completed, whatever its exit code (Slurm 22.05
        counts an exit 3 so)."""
        if final is JobState.CANCELLED:
            self.canceled += 1
        elif launch_failed or final is JobState.NODE_FAIL:
            self.failed += 1
        else:
            self.completed += 1

    def rpc(self, name: tuple[str, int], user: str, us: int) -> None:
        for table, key in ((self.by_type, name), (self.by_user, user)):
            entry = table.setdefault(key, [0, 0])
            entry[0] += 1
            entry[1] += us

    def cycle(self, backfill: bool, us: int, depth: int, queue: int, when: float, *, backfilled: int = 0,
              table: int = 0) -> None:
        (self.backfill if backfill else self.main).add(us, depth, queue, when)
        if backfill:
            self.backfilled += backfilled
            self.backfilled_ever += backfilled
            self.table_total += table
            self.last_table = table

    def report(self, now: float, pending: int, running: int, agents_busy: int, latency_us: int) -> dict:
        """Everything sdiag prints, as plain data."""
        def cycles(c: Cycles) -> dict:
            return {"count": c.count, "last_us": c.last_us, "max_us": c.max_us, "total_us": c.total_us,
                    "depth_total": c.depth_total, "last_depth": c.last_depth, "queue_total": c.queue_total,
                    "last_queue": c.last_queue, "last_when": c.last_when}
        return {"now": now, "since": self.since, "server_threads": self.serving, "agent_count": agents_busy,
                "jobs": {"submitted": self.submitted, "started": self.started, "completed": self.completed,
                         "canceled": self.canceled, "failed": self.failed, "pending": pending, "running": running},
                "main": cycles(self.main), "backfill": {**cycles(self.backfill), "backfilled": self.backfilled,
                                                        "backfilled_ever": self.backfilled_ever,
                                                        "table_total": self.table_total, "last_table": self.last_table},
                "latency_us": latency_us,
                "rpcs": [{"name": n, "id": i, "count": c, "total_us": t} for (n, i), (c, t) in self.by_type.items()],
                "users": [{"user": u, "count": c, "total_us": t} for u, (c, t) in self.by_user.items()]}
