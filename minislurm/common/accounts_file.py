"""accounts.conf on disk, as its two writers share it: the controller (sacctmgr's changes) and
``cluster add-users``.  Both hold one lock while they read and replace the file, and a new file is
written whole, flushed and renamed over the old one, so a reader sees the old or the new one and
a change that was answered is on disk."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(path: Path):
    """The lock every writer of accounts.conf holds (the controller, ``cluster add-users``)."""
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def write_durably(path: Path, text: str) -> None:
    """``text`` as the whole of ``path``, on disk (file and folder flushed) when this returns."""
    tmp = path.with_name(f".{path.name}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
