"""What every lab cluster offers, whatever its nodes are: processes or containers.

:class:`~minislurm.cluster.local.LocalCluster` (a controller and agents as processes of this
machine) and :class:`~minislurm.cluster.docker.DockerCluster` (a controller, nodes and a login
node as containers) share this interface, so a lab, a book page or a test runs on either::

    with make_cluster(nodes=2, gpus_per_node=4) as cluster:   # MINISLURM_CLUSTER=docker|local
        print(cluster.describe())
        cluster.run("sbatch", "--wrap", "hostname", cwd=cluster.workdir())

A subclass starts and stops the daemons (``up``, ``down``), runs the commands where a user
would type them (``run``), and crashes and boots nodes (``kill_node``, ``start_node``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from minislurm.client import Client, ClientError
from minislurm.core.cluster import ClusterConfig

COMMANDS = ("sbatch", "srun", "salloc", "squeue", "scancel", "sinfo", "sacct", "sstat", "seff", "jobstats", "scontrol",
            "sprio", "sshare", "sacctmgr", "sdiag")
KINDS = ("local", "docker")


def wait_for(test, timeout: float, what: str = "a condition", step: float = 0.05):
    """Poll ``test`` until it returns something true, and return that; TimeoutError after ``timeout`` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = test()
        if value:
            return value
        time.sleep(step)
    raise TimeoutError(f"waited {timeout:g} s for {what}")


class Cluster:
    kind = "?"
    config: ClusterConfig
    python = "python"  # the interpreter a job finds (with torch and minislurm.train)

    # -- what a subclass provides -------------------------------------------------------
    def up(self, timeout: float = 30.0) -> "Cluster":
        raise NotImplementedError

    def down(self) -> None:
        raise NotImplementedError

    def client(self, token: str | None = None) -> Client:
        raise NotImplementedError

    def run(self, *argv: str, input: str | None = None, check: bool = False, timeout: float = 120,
            env: dict | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
        """Run a command (``sbatch``, ``squeue``, ...) against this cluster, as its user would."""
        raise NotImplementedError

    def kill_node(self, name: str) -> None:
        """Crash a node: its agent and every process of its jobs die at once."""
        raise NotImplementedError

    def start_node(self, name: str) -> None:
        """Boot a crashed node again; its agent registers by itself."""
        raise NotImplementedError

    def workdir(self, name: str = "work") -> Path:
        """A folder (on this machine) that jobs see too, for a lab's files."""
        raise NotImplementedError

    def put(self, source: Path, folder: Path) -> None:
        """Copy the files in ``source`` into ``folder`` (a :meth:`workdir`), as the user's own."""
        for item in Path(source).iterdir():
            if item.is_file():
                shutil.copy(item, Path(folder) / item.name)

    def slurm_conf(self) -> str:
        """The slurm.conf the cluster runs with."""
        raise NotImplementedError

    def write_file(self, path: Path, text: str, mode: int = 0o644) -> None:
        """Create a file in a :meth:`workdir`, as the user's own."""
        Path(path).write_text(text)
        Path(path).chmod(mode)

    def describe(self) -> str:
        raise NotImplementedError

    def save_logs(self, folder: Path) -> None:
        """Copy the daemons' logs into ``folder`` while the cluster is still up, so that they
        outlive it (a story that went wrong keeps them)."""
        raise NotImplementedError

    def _controller_gone(self) -> str | None:
        """Why waiting for the controller is pointless (it exited), if it is."""
        return None

    # -- shared -------------------------------------------------------------------------
    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self.config.nodes]

    def wait_controller(self, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            gone = self._controller_gone()
            if gone:
                raise RuntimeError(gone)
            try:
                self.client().call("GET", "/ping", timeout=1)
                return
            except ClientError:
                time.sleep(0.05)
        raise TimeoutError("slurmctld did not start")

    def wait_nodes(self, timeout: float, state: str = "idle") -> None:
        api = self.client()
        wait_for(lambda: all(n["state"] == state and not n["flags"] for n in api.call("GET", "/nodes")["nodes"]),
                 timeout, f"every node to be {state}")

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()


def shape_text(nodes: int, gpus: int, what: str = "GPU") -> str:
    """``2 nodes x 4 GPUs``, ``1 node x 1 GPU``."""
    return f"{nodes} node{'s' * (nodes != 1)} x {gpus} {what}{'s' * (gpus != 1)}"


def chosen_kind(kind: str | None = None) -> str:
    """``kind``, else ``$MINISLURM_CLUSTER``, else ``local``: the one setting that moves every
    live lab and book page onto containers."""
    kind = (kind or os.environ.get("MINISLURM_CLUSTER") or "local").lower()
    if kind not in KINDS:
        raise ValueError(f"MINISLURM_CLUSTER={kind!r}: expected one of {', '.join(KINDS)}")
    return kind


def make_cluster(nodes: int = 4, gpus_per_node: int = 8, *, kind: str | None = None, dir: str | Path | None = None,
                 **settings) -> Cluster:
    """A cluster of the chosen kind (not started): a LocalCluster or a DockerCluster."""
    if chosen_kind(kind) == "docker":
        from minislurm.cluster.docker import DockerCluster
        return DockerCluster(nodes, gpus_per_node, dir=dir, **settings)
    from minislurm.cluster.local import LocalCluster
    return LocalCluster(nodes, gpus_per_node, dir=dir, **settings)
