"""Checkpoints that survive crashes, requeues and stale incarnations.

* Atomic: rank 0 writes a temporary file, fsyncs it, renames it over the old one (rename is
  atomic on one filesystem) and fsyncs the folder, so a crash leaves the old or the new
  checkpoint, never half of one.
* Exact: besides model and optimizer, a checkpoint holds every rank's RNG states, so a resumed
  run draws the same numbers an uninterrupted one would and ends bitwise identical.
* Fenced: each incarnation of a job (``SLURM_RESTART_COUNT``) claims the folder at start.  A
  run of an older incarnation that is still alive somewhere (a node cut off from the network
  while its job was requeued elsewhere) finds it no longer holds the claim and never writes.
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

    def holder(self) -> int:
        try:
            return int((self.folder / CLAIM).read_text())
        except (OSError, ValueError):
            return -1

    def claim(self) -> None:
        """Rank 0 of a new incarnation takes the folder; an older one may not."""
        if self.holder() > self.incarnation:
            raise Fenced(f"incarnation {self.incarnation} of job {self.job_id} was replaced by {self.holder()}")
        _atomic_write(self.folder / CLAIM, lambda f: f.write(str(self.incarnation).encode()))

    def save(self, state: dict) -> float:
        """Write ``state`` atomically; returns the seconds it took.  Raises Fenced if replaced."""
        if self.holder() != self.incarnation:
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
