"""The first code of every batch script and task, already running as the job's user.

The agent (root) starts it with the job's uid, gid and groups already set and the agent's own
spool as its working directory, so nothing of the job's is touched with root's rights.  Here,
as slurmstepd does once it has dropped privileges, it opens ``--input``/``--output``/``--error``
(creating a file with the user's umask, never a directory), reports to the agent, changes to
the job's working directory (or to /tmp, with Slurm's message, when it cannot) and execs the
job with ``SLURM_TASK_PID`` set to its own pid.

It runs as ``python -I -S -c <this file's text>``: no package needs to be reachable by the
user, nothing from the job's environment (PYTHONPATH, ...) changes what it does, and it starts
in milliseconds because it imports only modules built into the interpreter.

Arguments: ``cwd stdin stdout stderr open_mode report_fd ctty command...``, an empty string for
"not given".  ``report_fd`` is a SOCK_SEQPACKET socket to the agent, which gets one message:
``ok`` with the job's stderr attached (for slurmstepd's "CANCELLED" lines, written to the same
open file at the same offset), or ``error:<text>`` when a file could not be opened.  ``ctty``
(``srun --pty``): the terminal on stdin becomes the controlling terminal of the task's session.
"""

import os
import sys


def report(fd, message, attach=None):
    import _socket
    sock = _socket.socket(fileno=fd)
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, attach.to_bytes(4, sys.byteorder))] if attach is not None else []
    try:
        sock.sendmsg([message.encode("utf-8", "replace")], ancillary)
    except OSError:
        pass
    sock.close()


def open_file(what, path, flags):
    try:
        return os.open(path, flags, 0o666)
    except OSError as exc:
        raise LookupError(f"Could not open {what} file {path}: {exc.strerror}") from None


def open_stdio(stdin, stdout, stderr, mode):
    """The job's files on 0, 1 and 2 (each one left as the agent gave it when not named).  A
    step's task (``step-truncate``, ``step-append``) always appends, so that the tasks of a node
    sharing one file (``srun -o %N.out``) do not write over each other; the first of them
    truncates it."""
    append = os.O_APPEND if mode == "append" or mode.startswith("step-") else 0
    write = os.O_WRONLY | os.O_CREAT | append | (0 if mode.endswith("append") else os.O_TRUNC)
    fds = [open_file("stdin", stdin, os.O_RDONLY) if stdin else None,
           open_file("stdout", stdout, write) if stdout else None, None]
    if stderr:
        fds[2] = os.dup(fds[1]) if stderr == stdout and fds[1] is not None else open_file("stderr", stderr, write)
    for target, fd in enumerate(fds):
        if fd is not None:
            os.dup2(fd, target)
            os.close(fd)


def take_terminal():
    """Make the pseudo-terminal on stdin this new session's controlling terminal (job control,
    Ctrl-C as SIGINT to the foreground job, /dev/tty); without it the task still runs."""
    import fcntl
    import termios
    try:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    except OSError:
        pass


def stepd_error(text):
    """slurmstepd's error line; 22.05 names the node in its prefix (``slurmstepd-c1: error:``)."""
    node = os.environ.get("SLURMD_NODENAME")
    os.write(2, f"slurmstepd{'-' + node if node else ''}: error: {text}\n".encode())


def change_dir(cwd):
    try:
        os.chdir(cwd)
    except OSError as exc:
        stepd_error(f"couldn't chdir to `{cwd}': {exc.strerror}: going to /tmp instead")
        try:
            os.chdir("/tmp")
        except OSError:
            stepd_error("couldn't chdir to /tmp either. dying.")
            os._exit(1)


def execute(argv, env):
    """exec as execvp(3) would (PATH search, /bin/sh for a file without #!), or Slurm's
    ``execve(): <name>: <reason>`` and the errno as exit code."""
    import errno
    import _signal
    for signum in (_signal.SIGPIPE, getattr(_signal, "SIGXFSZ", None)):
        if signum is not None:  # Python ignores these; an ignored signal stays ignored across exec
            _signal.signal(signum, _signal.SIG_DFL)
    name = argv[0]
    folders = [""] if "/" in name else (env.get("PATH") or "/usr/bin:/bin").split(":")
    failure = None
    for folder in folders:
        path = os.path.join(folder, name) if folder else name
        try:
            os.execve(path, argv, env)
        except OSError as exc:
            if exc.errno == errno.ENOEXEC:
                try:
                    os.execve("/bin/sh", ["/bin/sh", path, *argv[1:]], env)
                except OSError as again:
                    exc = again
            if failure is None or exc.errno == errno.EACCES:
                failure = exc
    stepd_error(f"execve(): {name}: {failure.strerror}")
    os._exit(failure.errno or 1)


def main(args):
    cwd, stdin, stdout, stderr, mode, report_fd, ctty, *command = args
    if ctty:
        take_terminal()
    # The submitter's umask.  A batch script (a report without a step- mode) does not see the
    # variable, as under Slurm 22.05 (checked on the twin); its tasks do.
    batch = report_fd and not mode.startswith("step-")
    umask = os.environ.pop("SLURM_UMASK", "") if batch else os.environ.get("SLURM_UMASK", "")
    if umask:
        try:
            os.umask(int(umask, 8) & 0o777)
        except ValueError:
            pass
    try:
        open_stdio(stdin, stdout, stderr, mode)
    except LookupError as exc:
        if report_fd:
            report(int(report_fd), f"error:{exc}")
        os._exit(1)
    if report_fd:
        report(int(report_fd), "ok", attach=2)
    change_dir(cwd)
    os.environ["SLURM_TASK_PID"] = str(os.getpid())
    execute(command, dict(os.environ))


if __name__ == "__main__":
    main(sys.argv[1:])
