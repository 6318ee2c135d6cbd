"""A terminal on a live lab cluster, for book pages and labs: type a command, see what a shell shows.

    with lab_cluster(nodes=2, gpus_per_node=4) as sh:
        sh("sinfo")
        job = sh.submit("sbatch --gres=gpu:2 --wrap 'echo $CUDA_VISIBLE_DEVICES'")
        sh.wait(job)
        sh.cat(f"slurm-{job}.out")

Commands run against a real cluster from a work directory, the way a user types them at a login
node: a :class:`~minislurm.cluster.LocalCluster` (one controller and node agents as local
processes), or with ``MINISLURM_CLUSTER=docker`` a :class:`~minislurm.cluster.DockerCluster`
(containers; the commands run on its login node).  :func:`start` says which:
``$ command`` is printed, then what the command wrote.  Everything goes to stdout, so a book
page that treats stderr as an error still shows sbatch's error messages.  Leading
``NAME=value`` words set environment variables for that command, as in a shell.

A book page cannot wrap all its cells in one ``with``; :func:`start` returns a started
terminal instead, whose cluster is stopped by :meth:`Terminal.close` (the page's last cell)
or, failing that, when the Python process exits.
"""

from __future__ import annotations

import atexit
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from minislurm.cluster.local import wait_for

DONE = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
        "PREEMPTED")
PROGRESS = 10.0  # seconds a wait stays silent before it says what it waits for
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class Terminal:
    def __init__(self, cluster, work: Path, *, owned_dir: Path | None = None):
        self.cluster, self.work = cluster, Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self._owned = owned_dir
        self._api = None

    # -- commands -----------------------------------------------------------------------
    def __call__(self, command: str, *, show: bool = True, timeout: float = 120) -> str | None:
        """Run ``command`` (sbatch, squeue, ... or ``NAME=value ... cmd``) and print it and its
        output; with ``show=False`` print nothing and return its stdout instead.

        A trailing ``| grep PATTERN`` (``grep -E`` for a regular expression) filters the lines
        shown, as in a shell."""
        line, _, grep = command.partition(" | grep ")
        words = shlex.split(line)
        env = {}
        while words and _ASSIGN.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        r = self.cluster.run(*words, env=env, cwd=str(self.work), timeout=timeout)
        text = (r.stdout + r.stderr).rstrip()
        if grep:
            g = shlex.split(grep)
            regex = len(g) > 1 and g[0] == "-E"
            pattern = g[-1]
            keep = (lambda s: re.search(pattern, s)) if regex else (lambda s: pattern in s)
            text = "\n".join(s for s in text.splitlines() if keep(s))
        if show:
            print(f"$ {command}")
            if text:
                print(text)
            print()
        self.last = r
        return None if show else r.stdout

    def submit(self, command: str, *, show: bool = True) -> int:
        """Run an ``sbatch`` command and return the new job's id."""
        out = self(command, show=False)
        if show:
            print(f"$ {command}\n{(out + self.last.stderr).rstrip()}\n")
        m = re.search(r"job (\d+)", out) or re.fullmatch(r"\s*(\d+)\s*", out)
        if not m:
            raise RuntimeError(f"no job id in: {out!r} {self.last.stderr!r}")
        return int(m.group(1))

    # -- files --------------------------------------------------------------------------
    def write(self, name: str, text: str, *, show: bool = True) -> None:
        """Create a file in the work directory (shown as ``cat`` would print it)."""
        self.cluster.write_file(self.work / name, text, 0o755 if text.startswith("#!") else 0o644)
        if show:
            self.cat(name)

    def read(self, name: str) -> str:
        """A work file's text ("" if it does not exist yet)."""
        path = self.work / name
        return path.read_text() if path.exists() else ""

    def cat(self, name: str, *, grep: str | None = None) -> None:
        """Print a file of the work directory like ``cat`` (only lines containing ``grep``, if given)."""
        text = self.read(name)
        if grep is not None:
            text = "".join(line for line in text.splitlines(keepends=True) if grep in line)
        print(f"$ cat {name}" + (f" | grep {shlex.quote(grep)}" if grep is not None else ""))
        print(text.rstrip() + "\n")

    def ls(self, pattern: str = "*") -> None:
        names = sorted(p.name for p in self.work.glob(pattern))
        print(f"$ ls {pattern}\n" + "  ".join(names) + "\n")

    # -- the controller's view, for waiting -------------------------------------------------
    @property
    def api(self):
        if self._api is None:
            self._api = self.cluster.client()
        return self._api

    def job(self, job_id: int) -> dict:
        return self.api.call("GET", f"/jobs/{job_id}")

    def node(self, name: str) -> dict:
        return next(n for n in self.api.call("GET", "/nodes")["nodes"] if n["name"] == name)

    def until(self, test: Callable[[], object], timeout: float = 60.0, what: str = "condition"):
        """Poll ``test`` until it is true; a wait of more than PROGRESS seconds prints a line
        every PROGRESS seconds, so a long cell shows that it is alive and what it waits for."""
        start = time.monotonic()
        while True:
            left = timeout - (time.monotonic() - start)
            try:
                return wait_for(test, min(PROGRESS, left), what)
            except TimeoutError:
                waited = time.monotonic() - start
                if waited >= timeout:
                    raise TimeoutError(f"waited {timeout:g} s for {what}") from None
                print(f"# still waiting for {what} ({waited:.0f} s)", flush=True)

    def wait(self, *job_ids: int, state: str | tuple[str, ...] = DONE, timeout: float = 60.0) -> None:
        """Wait until every job is in ``state`` (default: finished); an array's id waits for
        all its tasks (they take ids of their own as they start, as in Slurm)."""
        wanted = (state,) if isinstance(state, str) else state
        goal = "finish" if wanted == DONE else f"be {' or '.join(wanted)}"
        for job_id in job_ids:
            self.until(lambda: all(j["state"] in wanted for j in self._named(job_id)), timeout,
                       f"job {job_id} to {goal}")

    def _named(self, job_id: int) -> list[dict]:
        """The job ``job_id``, or every task of the array ``job_id``."""
        jobs = self.api.call("GET", "/jobs", query={"ids": str(job_id)})["jobs"]
        tasks = [j for j in jobs if j.get("array_job_id") == job_id]
        return tasks or [self.job(job_id)]

    def log_has(self, name: str, text: str, timeout: float = 60.0) -> None:
        """Wait until the work file ``name`` contains ``text``."""
        path = self.work / name
        self.until(lambda: path.exists() and text in path.read_text(), timeout, f"{text!r} in {name}")

    # -- life cycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop the cluster (controller and agents) and remove its temporary directory."""
        self.cluster.down()
        if self._owned is not None:
            shutil.rmtree(self._owned, ignore_errors=True)
            self._owned = None

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start(nodes: int = 2, gpus_per_node: int = 4, *, quiet: bool = False, **settings) -> Terminal:
    """Start a cluster (``$MINISLURM_CLUSTER``: local, the default, or docker) in a temporary
    directory and return a terminal on it, in a work directory its jobs see too."""
    from minislurm.cluster import make_cluster

    tmp = Path(tempfile.mkdtemp(prefix="minislurm-lab-"))
    cluster = make_cluster(nodes, gpus_per_node, dir=tmp / "cluster", **settings)
    term = Terminal(cluster, tmp / "work", owned_dir=tmp)
    atexit.register(term.close)
    try:
        cluster.up()
        term.work = cluster.workdir()
    except BaseException:
        term.close()
        raise
    if not quiet:
        print(f"# the lab cluster: {cluster.describe()}\n")
    return term


@contextmanager
def lab_cluster(nodes: int = 2, gpus_per_node: int = 4, **settings):
    """``with lab_cluster(...) as sh:`` a terminal whose cluster is stopped when the block ends."""
    term = start(nodes, gpus_per_node, **settings)
    try:
        yield term
    finally:
        term.close()
