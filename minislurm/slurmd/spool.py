"""The agent's spool, where each batch script is written before it runs (slurmd's
``SlurmdSpoolDir/job00042/slurm_script``).

Root writes there, so no user may plant anything on its way: the spool and every folder above
it must belong to root (or the agent's user) and be writable by no one else (a sticky folder
such as /tmp excepted), and each job's folder is made afresh by root (whatever was there
before, a link or a user's leftovers, is moved aside and removed without following links),
then handed to the job's user, who must be able to run the script.
"""

from __future__ import annotations

import os
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


def write_script(spool: Path, job_id: int, inc: int, script: str, who: Identity) -> Path:
    """``job<id>/slurm_script`` in a fresh folder, owned by the job's user."""
    folder = spool / f"job{job_id:05d}"
    try:
        os.lstat(folder)
    except FileNotFoundError:
        pass
    else:
        aside = spool / f".stale-job{job_id:05d}.{inc}.{secrets.token_hex(4)}"
        os.rename(folder, aside)
        if os.path.isdir(aside) and not os.path.islink(aside):
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.unlink(aside)
    os.mkdir(folder, 0o700)
    path = folder / "slurm_script"
    with open(path, "xb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW, 0o700)) as f:
        f.write(script.encode("utf-8", "surrogateescape"))  # sbatch read its bytes that way
        if who.uid is not None:
            os.fchown(f.fileno(), who.uid, who.gid)
    if who.uid is not None:
        os.chown(folder, who.uid, who.gid, follow_symlinks=False)
    return path
