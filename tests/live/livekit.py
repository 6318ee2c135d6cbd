"""Helpers for the live tests: a started cluster, waiting with deadlines, finding processes.

``started(root, **settings)`` starts a :class:`LocalCluster` and, when done, stops it and
asserts that nothing it started is left: no controller, no agent and no job process (found in
/proc by the cluster's ``SLURM_CONF`` in their environment or on their command line).
"""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import select
import struct
import subprocess
import termios
import time
from contextlib import contextmanager
from pathlib import Path

from minislurm.client import ClientError
from minislurm.cluster.local import LocalCluster

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}


# -- /proc ----------------------------------------------------------------------------------
def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    stat = _read(f"/proc/{pid}/stat")
    return bool(stat) and stat.rsplit(b")", 1)[1].split()[0] != b"Z"


def processes(conf: Path, job_id: int | None = None) -> list[tuple[int, str]]:
    """Live processes of a cluster: its daemons (``--conf <conf>`` on their command line) and
    every job process (``SLURM_CONF=<conf>`` in their environment); with ``job_id`` only that
    job's processes."""
    conf_b = str(conf).encode()
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me or not _alive(int(entry)):
            continue
        cmd = _read(f"/proc/{entry}/cmdline").split(b"\0")
        env = _read(f"/proc/{entry}/environ").split(b"\0")
        daemon = conf_b in cmd and any(b"minislurm.ctld" in w or b"minislurm.slurmd" in w for w in cmd)
        in_job = b"SLURM_CONF=" + conf_b in env and any(w.startswith(b"SLURM_JOB_ID=") for w in env)
        if job_id is not None:
            if in_job and f"SLURM_JOB_ID={job_id}".encode() in env:
                found.append((int(entry), b" ".join(cmd).decode(errors="replace")))
        elif daemon or in_job:
            found.append((int(entry), b" ".join(cmd).decode(errors="replace")))
    return found


# -- a cluster with helpers ----------------------------------------------------------------
class Live:
    """A running LocalCluster plus the helpers every live test needs."""

    def __init__(self, cluster: LocalCluster, work: Path):
        self.c = cluster
        self.work = work
        self.api = cluster.client()

    def run(self, *argv, **kw):
        kw.setdefault("cwd", str(self.work))
        return self.c.run(*argv, **kw)

    def sbatch(self, *argv, script: str | None = None, **kw) -> int:
        r = self.run("sbatch", *argv, input=script, **kw)
        m = re.fullmatch(r"Submitted batch job (\d+)\n", r.stdout)
        assert r.returncode == 0 and m, (r.returncode, r.stdout, r.stderr)
        return int(m.group(1))

    def job(self, job_id: int) -> dict:
        return self.api.call("GET", f"/jobs/{job_id}")

    def wait(self, job_id: int, states=TERMINAL, timeout: float = 30.0) -> dict:
        states = {states} if isinstance(states, str) else set(states)
        deadline = time.time() + timeout
        while True:
            job = self.job(job_id)
            if job["state"] in states:
                return job
            if time.time() > deadline:
                raise AssertionError(f"job {job_id} is {job['state']} ({job['reason']}), not {states} "
                                     f"after {timeout} s")
            time.sleep(0.05)

    def node(self, name: str) -> dict:
        return next(n for n in self.api.call("GET", "/nodes")["nodes"] if n["name"] == name)

    def array_tasks(self, array: int) -> list[dict]:
        """The array's tasks in task order, as the controller has them."""
        jobs = self.api.call("GET", "/jobs", query={"ids": str(array)})["jobs"]
        return sorted((j for j in jobs if j["array_job_id"] == array), key=lambda j: j["array_task_id"])

    def acct(self, job_id: int, duplicates: bool = False) -> list[dict]:
        q = {"jobs": str(job_id), "duplicates": "1" if duplicates else None}
        return self.api.call("GET", "/acct", query=q)["records"]

    def idle(self, timeout: float = 30.0) -> None:
        """Wait until no job is pending or running (tests start from an empty cluster)."""
        until(lambda: not [j for j in self.api.call("GET", "/jobs")["jobs"] if j["state"] not in TERMINAL]
              and all(n["state"] == "idle" and not n["flags"] for n in self.api.call("GET", "/nodes")["nodes"]),
              timeout, "the cluster to be idle")

    def reset(self, timeout: float = 30.0) -> None:
        """Undo what an earlier (maybe failed) test left: cancel its jobs, boot the agents it
        killed, resume the nodes it took down; then wait for an idle cluster."""
        for j in self.api.call("GET", "/jobs")["jobs"]:
            if j["state"] not in TERMINAL:
                try:
                    self.api.call("POST", f"/jobs/{j['job_id']}/cancel", {"uid": 0})
                except ClientError:
                    pass
        for node in self.api.call("GET", "/nodes")["nodes"]:
            unit = self.c.host_of[node["name"]]
            if len(self.c.agents[unit]) > 1:
                self.c.restore_node(node["name"])  # a virtual node: boots again if it crashed
            elif unit not in self.c.procs:
                self.c.start_node(node["name"])
            if node["state"] in ("down", "drain", "drng"):
                self.api.call("POST", "/nodes/update", {"names": [node["name"]], "state": "RESUME"})
        self.idle(timeout)

    def job_processes(self, job_id: int) -> list[tuple[int, str]]:
        return processes(self.c.conf_path, job_id)

    def agent_address(self, node: str) -> tuple[str, int]:
        """Where a node's agent listens (from its log), to talk to it directly."""
        log = (self.c.dir / "log" / f"{self.c.host_of[node]}.log").read_text()
        host, port = re.findall(rf"slurmd {re.escape(node)} listening on (\S+):(\d+)", log)[-1]
        return host, int(port)


def until(predicate, timeout: float = 30.0, what: str = "a condition", step: float = 0.05):
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


def read_when(path: Path, predicate=lambda text: bool(text), timeout: float = 30.0) -> str:
    """The text of an output file once ``predicate`` holds for it."""
    holder = {}

    def ready():
        holder["text"] = path.read_text() if path.exists() else ""
        return predicate(holder["text"])
    until(ready, timeout, f"{path} to hold the expected text")
    return holder["text"]


# -- a terminal -------------------------------------------------------------------------------
def on_terminal(argv: list[str], env: dict, cwd, keys: bytes, size=(33, 101),
                timeout: float = 20) -> tuple[int, str, bool]:
    """Run ``argv`` on a new pseudo-terminal, type ``keys`` once it has printed something (the
    shell's prompt), and collect what it shows; (exit code, screen, terminal restored)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    before = termios.tcgetattr(slave)
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    screen, typed, deadline = b"", False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if select.select([master], [], [], 0.1)[0]:
                screen += os.read(master, 65536)
            if screen and not typed:
                os.write(master, keys)
                typed = True
        code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        while select.select([master], [], [], 0.2)[0]:
            try:
                screen += os.read(master, 65536)
            except OSError:
                break
        return code, screen.decode(errors="replace"), termios.tcgetattr(slave) == before
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        os.close(slave)


def no_leftovers(cluster: LocalCluster) -> None:
    deadline = time.time() + 5
    left = processes(cluster.conf_path)
    while left and time.time() < deadline:
        time.sleep(0.1)
        left = processes(cluster.conf_path)
    assert not left, f"processes survived down(): {left}"


@contextmanager
def unix_users(*names: str):
    """Throwaway Unix users for a test (the controller runs jobs of users the host knows); those
    this made are removed after.  Needs root.  Each test module names its own users: modules run
    side by side, and one module's clean-up must not remove a user another is still using."""
    made = []
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True)
            made.append(name)
    try:
        yield
    finally:
        for name in made:
            subprocess.run(["userdel", "--force", name], check=False)  # even if a stray process is left


@contextmanager
def started(root: Path, other: dict[str, str] | None = None, cluster_class=LocalCluster, **kw):
    """``other``: slurm.conf keys minislurm keeps without modelling them (TreeWidth, ...);
    ``cluster_class``: a LocalCluster that starts its daemons its own way."""
    cluster = cluster_class(**{"nodes": 2, "gpus_per_node": 4, "cpus_per_node": 8, "mem": 64_000, **kw},
                            dir=root / "cluster")
    cluster.config.other.update(other or {})
    (root / "work").mkdir(parents=True, exist_ok=True)
    try:
        cluster.up(timeout=30)
        yield Live(cluster, root / "work")
    finally:
        namespaces = [cluster._net.ns(n) for n in cluster._net.nodes] if cluster._net else []
        cluster.down()
        no_leftovers(cluster)
        if namespaces:
            listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
            assert not [ns for ns in namespaces if ns in listed.split()], listed
