"""Starting a batch script or a task as the job's user (slurmstepd's fork, privilege drop and exec).

The process starts as the launcher (:mod:`minislurm.slurmd.launcher`) with the user's uid, gid
and groups already set and ``/`` as its directory, so every path of the job (working directory,
input and output files) is opened by the user, never by root.  It runs in a session of its
own (a new process group), which :mod:`minislurm.slurmd.proc` uses to stop it.
"""

from __future__ import annotations

import asyncio
import functools
import os
import pwd
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from minislurm.core import rlimits

LAUNCHER = (Path(__file__).parent / "launcher.py").read_text()
# A step's task in the common case (its folder there, its command found on PATH) starts through
# dash, a quarter of a Python's start-up: hundreds of tasks at once are a cost of their own.  It
# does what the launcher does then (umask, chdir as the user, SLURM_TASK_PID, exec, the
# environment left as it came: dash's own PWD and OLDPWD put back); any other case (a missing
# folder or command, with Slurm's messages and exit codes) it hands to the launcher.
# Arguments: cwd, python, the launcher's text, PWD and OLDPWD as given ("-" before: set; dash
# changes both as it starts), the command.
TASK_SHELL = r"""
cwd=$0 py=$1 text=$2 pwd_given=$3 oldpwd_given=$4; shift 4
restore() {  # $1: the variable, $2: "-value" or "" (unset)
  case $2 in -*) eval "$1=\${2#-}; export $1" ;; *) unset "$1" ;; esac
}
restore PWD "$pwd_given"; restore OLDPWD "$oldpwd_given"
handover() { exec "$py" -I -S -c "$text" "$cwd" "" "" "" "" "" "" "" "$@"; }
cd -P -- "$cwd" 2>/dev/null || handover "$@"
case $1 in
  */*) [ -f "$1" ] && [ -x "$1" ] || handover "$@" ;;
  *) found=; set -f; IFS=:
     for d in ${PATH-/usr/bin:/bin}; do
       [ -n "$d" ] || d=.
       if [ -f "$d/$1" ] && [ -x "$d/$1" ]; then found=1; break; fi
     done
     unset IFS; set +f
     [ -n "$found" ] || handover "$@" ;;
esac
case ${SLURM_UMASK-} in
  '') ;;
  [0-7]|[0-7][0-7]|[0-7][0-7][0-7]|0[0-7][0-7][0-7]) umask "$SLURM_UMASK" ;;
  *) handover "$@" ;;
esac
restore PWD "$pwd_given"; restore OLDPWD "$oldpwd_given"
unset -f restore handover
SLURM_TASK_PID=$$; export SLURM_TASK_PID
exec "$@"
"""


@functools.cache
def task_shell() -> str | None:
    """dash, the shell whose start leaves a task's environment as it was (bash would add ``_``
    and SHLVL), if this machine has it and every user may run it."""
    path = shutil.which("dash", path="/usr/bin:/bin")
    return path if path and runs_for_everyone(path) else None
REPORT_TIMEOUT = 3.0  # seconds to wait for the launcher's word (the controller waits 5 for ours)


@dataclass
class Identity:
    uid: int | None = None  # None: run as the agent's own user
    gid: int | None = None
    name: str = ""
    groups: list[int] = field(default_factory=list)


def identity_for(user: str, uid: int | None = None, gid: int | None = None) -> Identity:
    """Who to run as: ``user`` as this node's passwd knows them, refused when the uid or gid the
    controller signed disagrees.  Only root can switch; otherwise the agent's own user runs
    everything (a personal cluster, with no privilege boundary to keep)."""
    if os.geteuid() != 0:
        return Identity(name=user)
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        raise PermissionError(f"user {user} not found on this node") from None
    groups = os.getgrouplist(pw.pw_name, pw.pw_gid)
    if uid is not None and uid != pw.pw_uid:
        raise PermissionError(f"user {user} is uid {pw.pw_uid} on this node, not {uid}")
    if gid is not None and gid not in groups:
        raise PermissionError(f"user {user} is not in group {gid} on this node")
    return Identity(pw.pw_uid, pw.pw_gid if gid is None else gid, pw.pw_name, groups)


def _already(who: Identity) -> bool:
    """The agent is ``who`` already (root's own jobs): nothing to switch, and a start without a
    switch is a light one (vfork, not a copy of the agent's memory).  Groups are compared as the
    kernel grants access, the primary group with the others: root started with no supplementary
    groups holds what ``getgrouplist`` lists for it, ``[0]``."""
    return (who.uid, who.gid) == (os.geteuid(), os.getegid()) and \
        set(who.groups) | {who.gid} == set(os.getgroups()) | {os.getegid()}


@dataclass
class Stdio:
    """A batch script's input, output and error files, opened by the launcher as the user."""
    stdin: str | None
    stdout: str
    stderr: str
    open_mode: str = "truncate"


def runs_for_everyone(path: str) -> bool:
    """Whether any user may execute ``path``: o+x on the file and on every folder above it."""
    try:
        real = os.path.realpath(path)
        if not os.stat(real).st_mode & 0o001:
            return False
        folder = os.path.dirname(real)
        while True:
            if not os.stat(folder).st_mode & 0o001:
                return False
            if folder == "/":
                return True
            folder = os.path.dirname(folder)
    except OSError:
        return False


@functools.cache
def launcher_python() -> str:
    """The interpreter for the launcher: the agent's own, unless some user could not run it
    (a Python installed in root's home); then the system's python3.  The launcher needs no
    package, so any Python 3 will do."""
    if os.geteuid() != 0:
        return sys.executable
    for candidate in (sys.executable, getattr(sys, "_base_executable", None),
                      shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")):
        if candidate and runs_for_everyone(candidate):
            return candidate
    return sys.executable


@dataclass
class Started:
    proc: asyncio.subprocess.Process
    error: str | None = None  # the launcher could not open a file (it exits 1)
    stderr_fd: int | None = None  # the job's stderr, same open file (batch scripts only)


async def spawn(argv: list[str], env: dict[str, str], cwd: str, who: Identity, *, stdio: Stdio | None = None,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL, terminal: int | None = None, prolog: str = "") -> Started:
    """Start ``argv`` through the launcher, in a new session, as ``who``.  With ``stdio`` the
    launcher opens the files and this waits for its word (at most REPORT_TIMEOUT seconds).
    ``terminal``, the slave of a pseudo-terminal (``srun --pty``), becomes its stdin, stdout,
    stderr and controlling terminal.  ``prolog`` (``srun --task-prolog``) and resource limits
    to set (``SLURM_RLIMIT_*`` in ``env``) are the launcher's work too.  No descriptor of the
    agent's (its log, ...) reaches the user's process."""
    kw = {}
    if who.uid is not None and not _already(who):
        kw.update(user=who.uid, group=who.gid, extra_groups=who.groups)
    ours = theirs = None
    if stdio is not None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        kw["pass_fds"] = (theirs.fileno(),)
        files = [stdio.stdin or "", stdio.stdout, stdio.stderr, stdio.open_mode, str(theirs.fileno())]
    else:
        files = ["", "", "", "", ""]
    files += ["ctty" if terminal is not None else "", prolog]
    if terminal is not None:
        stdin = stdout = stderr = terminal
    launcher_work = stdio is not None or terminal is not None or prolog or any(k.startswith(rlimits.PREFIX) for k in env)
    if not launcher_work and task_shell():
        given = [f"-{env[k]}" if k in env else "" for k in ("PWD", "OLDPWD")]
        start = [task_shell(), "-c", TASK_SHELL, cwd, launcher_python(), LAUNCHER, *given, *argv]
    else:
        start = [launcher_python(), "-I", "-S", "-c", LAUNCHER, cwd, *files, *argv]
    try:
        proc = await asyncio.create_subprocess_exec(
            *start, env=env, cwd="/",
            start_new_session=True, stdin=stdin, stdout=stdout, stderr=stderr, **kw)
    except BaseException:
        if ours is not None:
            ours.close()
        raise
    finally:
        if theirs is not None:
            theirs.close()
    if ours is None:
        return Started(proc)
    with ours:
        message, fds = await _word(ours)
    if message == b"ok" and len(fds) == 1:
        return Started(proc, stderr_fd=fds[0])
    for fd in fds:
        os.close(fd)
    if message.startswith(b"error:"):
        return Started(proc, error=message[6:].decode("utf-8", "replace"))
    return Started(proc)  # no word in time (a slow start, a FIFO as input): it runs on its own


async def _word(sock: socket.socket) -> tuple[bytes, list[int]]:
    """The launcher's one message, with at most one file descriptor attached."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    sock.setblocking(False)

    def readable() -> None:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 4096, 1)
        except BlockingIOError:
            return
        except OSError:
            message, fds = b"", []
        if not done.done():
            done.set_result((message, fds))
        else:
            for fd in fds:
                os.close(fd)

    loop.add_reader(sock.fileno(), readable)
    try:
        return await asyncio.wait_for(done, REPORT_TIMEOUT)
    except asyncio.TimeoutError:
        return b"", []
    finally:
        loop.remove_reader(sock.fileno())
