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

Arguments: ``cwd stdin stdout stderr open_mode report_fd ctty prolog command...``, an empty string
for "not given".  ``report_fd`` is a SOCK_SEQPACKET socket to the agent, which gets one message:
``ok`` with the job's stderr attached (for slurmstepd's "CANCELLED" lines, written to the same
open file at the same offset), or ``error:<text>`` when a file could not be opened.  ``ctty``
(``srun --pty``): the terminal on stdin becomes the controlling terminal of the task's session.
``prolog`` (``srun --task-prolog``) runs first and may change the task's environment; the
submit host's resource limits (``SLURM_RLIMIT_*``, see :mod:`minislurm.core.rlimits`) are set
last, just before the exec, as slurmstepd does.
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


def task_prolog(path, env):
    """Run ``srun --task-prolog`` as the task would run (its user, folder and environment, with
    ``SLURM_SCRIPT_CONTEXT=prolog_task``) and apply what it prints (stdout and stderr, as one
    stream): ``export NAME=value`` sets a variable of the task, ``unset NAME`` removes one,
    ``print TEXT`` writes TEXT to the task's stdout; other lines are ignored.  Returns its exit
    status, 1 if it could not run or was killed, with slurmstepd's lines on the task's stderr
    (worded as 22.05's, recorded on the twin); the task starts only after a 0."""
    import subprocess
    env["SLURM_SCRIPT_CONTEXT"] = "prolog_task"
    failed = "user task_prolog did not exit normally. reason: "
    if not path.startswith("/"):
        stepd_error(f"run_command: user task_prolog is not fully qualified pathname ({path})")
        status, output = None, "Run command failed - configuration error"
    else:
        try:
            done = subprocess.run([path], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
            status, output = done.returncode, done.stdout.decode("utf-8", "replace")
        except OSError as exc:
            stepd_error(f"run_command: user task_prolog can not be executed ({path}) {exc.strerror}")
            status, output = None, "Run command failed - configuration error"
    if status is None or status < 0:
        stepd_error(failed + (output if status is None else output.strip()))
        status = 1
    else:
        for line in output.splitlines():
            word, space, rest = line.partition(" ")
            if word == "print" and space:
                os.write(1, (rest.lstrip() + "\n").encode())
            elif word == "export" and "=" in rest:
                name, _, value = rest.lstrip().partition("=")
                env[name.rstrip()] = value
            elif word == "unset" and rest.strip():
                env.pop(rest.strip(), None)
    if status:
        stepd_error(f"--task-prolog failed status={status}")
    return status


def set_limits(env):
    """The submit host's soft limits, each ``SLURM_RLIMIT_<NAME>`` taken out of the environment.
    A soft limit above the hard one raises the hard one too, which only root may do; a limit
    that cannot be set is reported only when the user asked for it (``U``, ``--propagate``)."""
    import resource
    for key in [k for k in env if k.startswith("SLURM_RLIMIT_")]:
        value = env.pop(key)
        asked = value.startswith("U")
        number = value[1:] if asked else value
        which = getattr(resource, "RLIMIT_" + key[len("SLURM_RLIMIT_"):], None)
        if which is None or not number.isdigit():
            continue
        soft = int(number) if int(number) < 2 ** 63 else resource.RLIM_INFINITY
        current, hard = resource.getrlimit(which)
        if soft == current:
            continue
        above = hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard)
        try:
            resource.setrlimit(which, (soft, soft if above else hard))
        except (ValueError, OSError):
            if asked:
                shown = "'unlimited'" if soft == resource.RLIM_INFINITY else str(soft)
                stepd_error(f"Can't propagate {key[len('SLURM_'):]} of {shown} from submit host: "
                            "Operation not permitted")


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
    cwd, stdin, stdout, stderr, mode, report_fd, ctty, prolog, *command = args
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
    env = dict(os.environ)
    if prolog:
        status = task_prolog(prolog, env)
        if status:
            os._exit(status)
    set_limits(env)
    execute(command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
