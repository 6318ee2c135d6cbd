"""The agent's spool, where each batch script is written before it runs (slurmd's
``SlurmdSpoolDir/job00042/slurm_script``).

Root writes there, so no user may plant anything on its way: the spool and every folder above
it must belong to root (or the agent's user) and be writable by no one else (a sticky folder
such as /tmp excepted), and each job's folder is made afresh by root (whatever was there
before, a link or a user's leftovers, is moved aside and removed without following links),
then handed to the job's user, who must be able to run the script.

A job's folder goes when its run has ended on this node (:func:`remove`), as slurmd removes
its job folders: thousands of ended jobs must not fill the spool.  A script that does not
fit (the spool is full, or over its quota) is the job's failure, :class:`SpoolFull`, and the
half-written folder goes at once.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
from pathlib import Path

from minislurm.slurmd.spawn import Identity


def prepare(spool: Path) -> None:
    """Create the spool if needed; refuse (SystemExit) one that others could tamper with."""
    os.makedirs(spool, mode=0o755, exist_ok=True)
    if os.geteuid() != 0:
        return  # a personal cluster: every job runs as the agent's own user
    real = Path(os.path.realpath(spool))
    for folder in (real, *real.parents):
        st = os.stat(folder)
        open_to_others = st.st_mode & 0o022 and not (st.st_mode & stat.S_ISVTX and folder != real)
        if st.st_uid not in (0, os.geteuid()) or open_to_others:
            raise SystemExit(f"slurmd: fatal: spool folder {spool}: {folder} may be changed by other users")


class SpoolFull(OSError):
    """The script does not fit in the spool: the job fails, the node is not at fault."""


FULL = (errno.ENOSPC, errno.EDQUOT)


def job_folder(spool: Path, job_id: int) -> Path:
    return spool / f"job{job_id:05d}"


def remove(spool: Path, job_id: int) -> bool:
    """Remove ``job<id>`` and whatever its user left in it, following no link; False if absent."""
    folder = job_folder(spool, job_id)
    try:
        os.lstat(folder)
    except FileNotFoundError:
        return False
    aside = spool / f".stale-job{job_id:05d}.{secrets.token_hex(4)}"
    os.rename(folder, aside)  # the name is free at once, even while the removal runs
    _discard(aside)
    return True


def _discard(path: Path) -> None:
    """Delete a folder with everything in it, or a file or link, following no link."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)  # never follows links (rmtree.avoids_symlink_attacks)
    else:
        os.unlink(path)


def write_script(spool: Path, job_id: int, inc: int, script: str, who: Identity) -> Path:
    """``job<id>/slurm_script`` in a fresh folder, owned by the job's user; :class:`SpoolFull`
    (with nothing left behind) when it does not fit."""
    folder = job_folder(spool, job_id)
    remove(spool, job_id)
    try:
        os.mkdir(folder, 0o700)
        path = folder / "slurm_script"
        with open(path, "xb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW, 0o700)) as f:
            f.write(script.encode("utf-8", "surrogateescape"))  # sbatch read its bytes that way
            if who.uid is not None:
                os.fchown(f.fileno(), who.uid, who.gid)
    except OSError as exc:
        if exc.errno not in FULL:
            raise
        remove(spool, job_id)
        raise SpoolFull(exc.errno, f"cannot write the batch script to {folder}: {exc.strerror}") from None
    if who.uid is not None:
        os.chown(folder, who.uid, who.gid, follow_symlinks=False)
    return path


def purge(spool: Path) -> int:
    """Remove every job folder an earlier agent left (a fresh agent knows no run, and a script
    still running keeps its open file); returns how many.  Nothing else in the spool is touched."""
    gone = 0
    for entry in os.listdir(spool):
        match = re.fullmatch(r"job(\d+)|\.stale-job(\d+)\..*", entry)
        if not match:
            continue
        if match.group(1) is not None:
            gone += remove(spool, int(match.group(1)))
        else:
            _discard(spool / entry)
    return gone
