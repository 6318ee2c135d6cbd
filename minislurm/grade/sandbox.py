"""Run one submission's grading (:mod:`.runner`) in isolation, under a wall-clock limit.

Every submission gets its own temporary folder and its own process.  The notebook and the lab's
checks reach the runner on its stdin, never as files, and the result comes back on its stdout
after a random nonce: a submission can neither read the hidden checks nor write a result.  When the
whole run takes longer than the limit, the runner, its Jupyter kernel (which jupyter_client
starts in a session of its own, out of reach of a process-group kill) and anything they started
are killed, and the submission is reported as timed out: not graded (a slow machine is no wrong
answer), to be rerun.

Two ways to run, chosen once per ``grade run``:

- :class:`DockerSandbox` when a Docker engine answers and the grading image exists: each
  submission in a fresh container with no network, a read-only root file system, no mounts,
  limited CPUs, memory and process count, as an unprivileged user.  The image
  (``make grader-image``: docker/grader) contains minislurm with its requirements.
- :class:`LocalSandbox` otherwise: a local subprocess.  Student code then runs as the instructor,
  with the network, so grade untrusted submissions with Docker.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

RUNNER = ["-m", "minislurm.grade.runner"]
# The grading image's unprivileged user (docker/grader/Dockerfile).  Not the caller's uid: as root
# that would be root in the container (and without capabilities the labs' node agents then fail
# to start jobs), and any other uid has no passwd entry there (the labs' controller looks it up).
GRADER_USER = "1000:1000"
KEEP_ENV = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "VIRTUAL_ENV", "PYTHONPATH", "SYSTEMROOT"}


@dataclass
class Outcome:
    """What grading one submission gave: the runner's result, or why there is none."""

    result: dict = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    log_tail: str = ""
    timed_out: float | None = None  # the whole-submission limit it ran past: nothing graded, rerun it


class LocalSandbox:
    name = "local"
    description = "locally, without Docker: student code runs unsandboxed as this user"

    def command(self, work: Path, tag: str) -> list[str]:
        return [sys.executable, *RUNNER]

    def env(self, work: Path) -> dict[str, str]:
        """A short environment: the student's code gets no tokens or other settings of ours."""
        env = {k: v for k, v in os.environ.items() if k in KEEP_ENV or k.startswith("LC_")}
        env.update(TMPDIR=str(work / "tmp"), JUPYTER_RUNTIME_DIR=str(work / "tmp" / "runtime"), MPLBACKEND="Agg",
                   PYTHONDONTWRITEBYTECODE="1")
        return env

    def stop(self, proc: subprocess.Popen, tag: str) -> None:
        kill_tree(proc.pid)


@dataclass
class DockerSandbox:
    image: str = "minislurm-grader"
    cpus: str = "1"
    memory: str = "2g"
    pids: int = 256
    name = "docker"

    @property
    def description(self) -> str:
        return (f"in Docker image {self.image!r}: no network, read-only root, "
                f"{self.cpus} CPU, {self.memory} memory")

    def command(self, work: Path, tag: str) -> list[str]:
        return ["docker", "run", "--rm", "-i", "--name", tag,
                # no network; the host name still resolves (srun looks its own address up)
                "--network", "none", "--hostname", "grader", "--add-host", "grader:127.0.0.1",
                "--read-only", "--tmpfs", "/tmp:rw,exec,size=512m",
                "--cpus", self.cpus, "--memory", self.memory, "--pids-limit", str(self.pids),
                "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                "--user", GRADER_USER,
                "-e", "HOME=/tmp", "-e", "MPLBACKEND=Agg", "--workdir", "/tmp",
                self.image, "python", *RUNNER]

    def env(self, work: Path) -> dict[str, str]:
        return dict(os.environ)

    def stop(self, proc: subprocess.Popen, tag: str) -> None:
        subprocess.run(["docker", "kill", tag], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=30, check=False)
        kill_tree(proc.pid)


def docker_ready(image: str) -> bool:
    """A Docker engine answers and ``image`` exists (never starts an engine)."""
    if shutil.which("docker") is None:
        return False
    try:
        for cmd in (["docker", "info"], ["docker", "image", "inspect", image]):
            if subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20, check=False).returncode != 0:
                return False
    except (OSError, subprocess.TimeoutExpired):
        return False
    return True


def choose(image: str, *, docker: str = "auto") -> LocalSandbox | DockerSandbox:
    """``docker``: "auto" (Docker when ready), "never", or "always" (an error when not ready)."""
    if docker != "never" and docker_ready(image):
        return DockerSandbox(image)
    if docker == "always":
        raise RuntimeError(f"no Docker engine answers or image {image!r} does not exist (make grader-image builds it)")
    return LocalSandbox()


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc; elsewhere none)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid``, its process group and everything below it (kernels included)."""
    below = descendants(pid)  # before the kill: orphans lose their parent link
    for target in [pid, *below]:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def kill_leftovers(work: Path) -> None:
    """SIGKILL processes whose command line names ``work`` (kernels: their connection file is there)."""
    marker = str(work).encode()
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return
    for entry in entries:
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker in f.read():
                    os.kill(int(entry), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


def checks_in(autograder: Path) -> dict:
    """The lab's questions and check cells (``grade assign`` puts them in the zip)."""
    import zipfile

    from minislurm.grade.assign import CHECKS

    with zipfile.ZipFile(autograder) as zf:
        try:
            return json.loads(zf.read(CHECKS))
        except KeyError:
            raise ValueError(f"{autograder} has no {CHECKS}: assign the lab again with this minislurm") from None


def run_one(sandbox, submission: Path, autograder: Path, *, cell_timeout: float,
            total_timeout: float) -> Outcome:
    """Grade ``submission`` in a fresh folder; never raises for a bad submission."""
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="minislurm-grade-"))
    try:
        (work / "tmp").mkdir()
        nonce = uuid.uuid4().hex
        try:
            text = submission.read_bytes().decode("utf-8", errors="replace")
        except OSError as e:
            return Outcome(error=f"unreadable: {e}")
        request = json.dumps({"nonce": nonce, "cell_timeout": cell_timeout, "notebook": text,
                              "checks": checks_in(autograder)}) + "\n"
        tag = f"minislurm-grade-{uuid.uuid4().hex[:12]}"
        log_path = work / "log.txt"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(sandbox.command(work, tag), cwd=work / "tmp", env=sandbox.env(work),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                    start_new_session=True)
            # Threads, not communicate(): a process the submission leaves behind may hold stdout
            # open, and only the runner's own exit (or the limit) may end the wait.
            chunks: list[bytes] = []
            reader = threading.Thread(target=_drain, args=(proc.stdout, chunks), daemon=True)
            writer = threading.Thread(target=_feed, args=(proc.stdin, request.encode()), daemon=True)
            reader.start()
            writer.start()
            try:
                proc.wait(timeout=total_timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                sandbox.stop(proc, tag)  # before wait(): an unreaped pid cannot have been reused
                proc.wait()
                timed_out = True
            reader.join(timeout=2)
            out = b"".join(chunks)
        kill_leftovers(work)  # e.g. a kernel orphaned by a crashed runner
        mark = f"RESULT {nonce} ".encode()
        said = b"\n".join(line for line in (out or b"").splitlines() if not line.startswith(mark))
        tail = (_tail(log_path) + said[-2000:].decode("utf-8", errors="replace")).strip()
        if timed_out:
            return Outcome(error=f"timed out: grading took longer than {total_timeout:g} s as a whole",
                           seconds=time.monotonic() - t0, log_tail=tail, timed_out=total_timeout)
        lines = [line for line in (out or b"").splitlines() if line.startswith(mark)]
        if not lines:
            last = tail.splitlines()[-1] if tail else "no output"
            return Outcome(error=f"the grader exited with status {proc.returncode} and no result: {last}",
                           seconds=time.monotonic() - t0, log_tail=tail)
        try:
            result = json.loads(lines[-1][len(mark):])
        except ValueError as e:
            return Outcome(error=f"unreadable result: {e}", seconds=time.monotonic() - t0, log_tail=tail)
        return Outcome(result=result, error=result.get("error"), seconds=time.monotonic() - t0, log_tail=tail)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _drain(stream, chunks: list[bytes]) -> None:
    try:
        while data := stream.read1(65536):
            chunks.append(data)
    except (OSError, ValueError):
        pass


def _feed(stream, data: bytes) -> None:
    try:
        stream.write(data)
        stream.close()
    except (OSError, ValueError):  # the runner died or never read: its exit says why
        pass


def _tail(path: Path, limit: int = 4000) -> str:
    data = path.read_bytes()[-limit:]
    return data.decode("utf-8", errors="replace")
