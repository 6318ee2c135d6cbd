"""What a node agent knows about job runs: those it runs, and enough of the past to refuse a
stale or replayed step credential (as slurmd keeps its credential state: used credentials,
revoked jobs).

A *run* is one incarnation of a job (its restart count): after ``scontrol requeue`` or a node
failure the same job id comes back as a new run, and step ids start at 0 again, so runs are
keyed by (job id, incarnation) and steps by (job id, incarnation, step id).  A run ends on
this node when its batch script ends here or the controller terminates it; from then on no
credential of that run, or of an older one, starts anything here.  Nothing ever replaces the
record of another run.

What is remembered is forgotten after an hour: a step credential lives two minutes.  An agent
that restarts remembers nothing, so a credential of a run that ended before the restart could
start a step until it expires; the controller's fencing (see :mod:`minislurm.ctld.health`)
kills such a step at its next ping.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from minislurm.common.auth import REPLAYED_CREDENTIAL, REVOKED_CREDENTIAL, CredentialError
from minislurm.slurmd.proc import ProcessSet

MEMORY = 3600.0  # seconds an ended run (or the newest incarnation of a job) is remembered


@dataclass
class LocalJob:
    """One run of a job on this node: its batch script (on the first node) and its steps."""
    job_id: int
    inc: int
    batch: asyncio.subprocess.Process | None = None
    stderr_fd: int | None = None  # the batch script's stderr: slurmstepd's messages go there too
    steps: dict[int, ProcessSet] = field(default_factory=dict)
    roots: ProcessSet = field(default_factory=ProcessSet)
    stopping: bool = False  # the controller asked for it to end (SIGTERM sent, SIGKILL to follow)
    meters: dict = field(default_factory=dict)  # "batch" or step id -> usage.Meter, for sstat and sacct
    inputs: dict = field(default_factory=dict)  # step id -> stdin.StepInput, what srun's stdin feeds
    notices: dict = field(default_factory=dict)  # step id -> the queue of lines its srun is sent

    def alive(self) -> bool:
        return self.roots.alive()


class Runs:
    def __init__(self, node: str, clock=time.time):
        self.node, self.clock = node, clock
        self.live: dict[tuple[int, int], LocalJob] = {}
        self.newest: dict[int, tuple[int, float]] = {}  # job id -> (highest incarnation seen, when)
        self.ended: dict[tuple[int, int], float] = {}  # (job id, incarnation) -> when it ended here
        self.used: dict[tuple[int, int, int], float] = {}  # step credentials launched here -> their expiry
        self._pruned = 0.0

    def get(self, job_id: int, inc: int) -> LocalJob | None:
        return self.live.get((job_id, inc))

    def stale(self, job_id: int, inc: int) -> bool:
        """This run ended here, or a later run of the job was seen here."""
        newest = self.newest.get(job_id)
        return (job_id, inc) in self.ended or (newest is not None and inc < newest[0])

    def _note(self, job_id: int, inc: int) -> None:
        newest = self.newest.get(job_id)
        self.newest[job_id] = (max(inc, newest[0]) if newest else inc, self.clock())

    def open(self, job_id: int, inc: int) -> LocalJob:
        """The record of this run, made if new; only for a run that is not stale."""
        self._note(job_id, inc)
        run = self.live.get((job_id, inc))
        if run is None:
            run = self.live[(job_id, inc)] = LocalJob(job_id, inc, roots=ProcessSet(tag=(job_id, self.node, inc)))
        return run

    def admit_step(self, claims: dict) -> LocalJob:
        """The run a verified step credential may start its tasks in, or why not."""
        self._prune()
        job_id, inc, step_id = claims["job"], claims["inc"], claims["step"]
        if self.stale(job_id, inc):
            raise CredentialError(REVOKED_CREDENTIAL)
        if (job_id, inc, step_id) in self.used:
            raise CredentialError(REPLAYED_CREDENTIAL)
        self.used[(job_id, inc, step_id)] = float(claims["exp"])
        return self.open(job_id, inc)

    def end(self, job_id: int, inc: int) -> None:
        self._note(job_id, inc)
        self.ended[(job_id, inc)] = self.clock()

    def forget(self, run: LocalJob) -> None:
        """Drop the record of a run with nothing left to track (it stays in ``ended`` if it ended)."""
        if self.live.get((run.job_id, run.inc)) is run:
            del self.live[(run.job_id, run.inc)]

    def _prune(self) -> None:
        now = self.clock()
        if now - self._pruned < 60:
            return
        self._pruned = now
        self.used = {k: exp for k, exp in self.used.items() if exp >= now}
        self.ended = {k: t for k, t in self.ended.items() if now - t < MEMORY}
        running = {job_id for job_id, _ in self.live}
        self.newest = {j: v for j, v in self.newest.items() if j in running or now - v[1] < MEMORY}
