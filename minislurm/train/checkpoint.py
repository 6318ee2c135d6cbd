"""Checkpoints that survive crashes, requeues and stale incarnations.

* Atomic: rank 0 writes a temporary file, fsyncs it, renames it over the old one (rename is
  atomic on one filesystem) and fsyncs the folder, so a crash leaves the old or the new
  checkpoint, never half of one.
* Exact: besides model and optimizer, a checkpoint holds every rank's RNG states, so a resumed
  run draws the same numbers an uninterrupted one would and ends bitwise identical.
* Fenced: each run of a job claims the folder at start, as ``job.incarnation`` (the job id and
  ``SLURM_RESTART_COUNT``).  A run that is still alive somewhere after it was replaced (a node
  cut off from the network while its job was requeued elsewhere) finds it no longer holds the
  claim and never writes.
* Shared by a chain: the folder belongs to a run, not to a job, so the next link of a chain (a
  new job id: ``--array=1-10%1`` or ``--dependency=singleton``) claims it and goes on from the
  last checkpoint.  Only an older incarnation of the job holding the folder is refused a claim.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch

CHECKPOINT = "checkpoint.pt"
CLAIM = "incarnation"


class Fenced(RuntimeError):
    """This run belongs to an incarnation that has been replaced."""


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Checkpointer:
    def __init__(self, folder: str | Path, job_id: int, incarnation: int):
        self.folder = Path(folder)
        self.job_id, self.incarnation = job_id, incarnation
        self.folder.mkdir(parents=True, exist_ok=True)

    def holder(self) -> tuple[int, int] | None:
        """(job id, incarnation) of the run that claimed the folder last, or None."""
        try:
            job_id, incarnation = (self.folder / CLAIM).read_text().split(".")
            return int(job_id), int(incarnation)
        except (OSError, ValueError):
            return None

    def claim(self) -> None:
        """Rank 0 of a run takes the folder, unless a newer incarnation of its own job holds it."""
        held = self.holder()
        if held and held[0] == self.job_id and held[1] > self.incarnation:
            raise Fenced(f"incarnation {self.incarnation} of job {self.job_id} was replaced by {held[1]}")
        _atomic_write(self.folder / CLAIM, lambda f: f.write(f"{self.job_id}.{self.incarnation}".encode()))

    def save(self, state: dict) -> float:
        """Write ``state`` atomically; returns the seconds it took.  Raises Fenced if replaced."""
        if self.holder() != (self.job_id, self.incarnation):
            raise Fenced(f"incarnation {self.incarnation} of job {self.job_id} no longer holds {self.folder}")
        t0 = time.perf_counter()
        state = {**state, "meta": {"job_id": self.job_id, "restart_count": self.incarnation, "time": time.time()}}
        _atomic_write(self.folder / CHECKPOINT, lambda f: torch.save(state, f))
        return time.perf_counter() - t0

    def load(self) -> dict | None:
        path = self.folder / CHECKPOINT
        if not path.exists():
            return None
        return torch.load(path, map_location="cpu", weights_only=True)
