"""A cluster started from Python goes when that process goes, even when it is killed before it
can stop the cluster (a notebook kernel that dies); ``minislurm cluster up``'s cluster stays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

OWNER = """
import sys, time
from minislurm.cluster import LocalCluster
c = LocalCluster(nodes=1, gpus_per_node=1, dir=sys.argv[1]).up()
c.run("sbatch", "--wrap", "echo $$ > job.pid; exec sleep 300", cwd=sys.argv[2])
print("up", flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def until(test, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_killed_owner_takes_its_cluster_and_its_jobs_with_it(tmp_path):
    left: list[int] = []
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path / "cluster"), str(tmp_path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline() == "up\n"
        assert until(lambda: (tmp_path / "job.pid").is_file() and (tmp_path / "job.pid").read_text().strip(), 30)
        job = int((tmp_path / "job.pid").read_text())
        daemons = [int(line.split()[1]) for line in (tmp_path / "cluster" / "pids").read_text().splitlines()]
        left = [job, *daemons]
        assert len(daemons) == 2 and all(map(alive, [job, *daemons]))
        owner.kill()  # no chance to stop anything itself
        owner.wait()
        # SlurmdTimeout plays no part: each daemon notices within a second that its parent is gone
        assert until(lambda: not any(map(alive, [job, *daemons])), 15), [p for p in [job, *daemons] if alive(p)]
    finally:
        owner.kill()
        for pid in filter(alive, left):  # only when the test failed
            os.kill(pid, signal.SIGKILL)


def test_cluster_up_outlives_the_command_until_cluster_down(tmp_path):
    def minislurm(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "minislurm.cli.main", *args], capture_output=True,
                              text=True, timeout=120)

    folder = str(tmp_path / "cluster")
    up = minislurm("cluster", "up", "--nodes", "1", "--gpus-per-node", "1", "--dir", folder)
    try:
        assert up.returncode == 0 and up.stdout.startswith("minislurm cluster is up: 1 nodes"), up.stderr
        time.sleep(2)  # longer than the daemons' parent check: `up` has exited, they stay
        status = minislurm("cluster", "status", "--dir", folder)
        assert status.returncode == 0 and status.stdout.count("running") == 2, status.stdout
    finally:
        down = minislurm("cluster", "down", "--dir", folder)
    assert (down.returncode, down.stdout) == (0, "minislurm cluster is down\n")
    assert minislurm("cluster", "status", "--dir", folder).returncode == 1


def test_cluster_up_again_resumes_the_same_cluster(tmp_path):
    """``cluster up`` on a folder that holds a cluster never writes a new key (the tokens handed
    out must keep working): running, it says so and exits 0; stopped, it starts the daemons on
    the same slurm.conf, key and state, and does not wait for nodes a restored job keeps busy."""
    def minislurm(*args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "minislurm.cli.main", *args], capture_output=True,
                              text=True, timeout=120, **kw)

    folder = tmp_path / "cluster"
    up = minislurm("cluster", "up", "--nodes", "1", "--gpus-per-node", "1", "--dir", str(folder))
    assert up.returncode == 0, up.stderr
    try:
        env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
        env.pop("SLURM_JWT", None)
        held = minislurm("sbatch", "--hold", "--wrap", "true", env=env, cwd=tmp_path).stdout.split()[-1]
        busy = minislurm("sbatch", "--wrap", "sleep 300", env=env, cwd=tmp_path).stdout.split()[-1]
        key = (folder / "jwt_hs256.key").read_bytes()
        token = next((folder / "tokens").iterdir()).read_text().strip()
        conf = (folder / "slurm.conf").read_text()

        again = minislurm("cluster", "up", "--dir", str(folder))
        assert (again.returncode, again.stderr) == (0, "")
        assert again.stdout.startswith(f"minislurm cluster is already running in {folder}: 1 nodes")

        assert minislurm("cluster", "down", "--dir", str(folder)).returncode == 0
        back = minislurm("cluster", "up", "--nodes", "1", "--dir", str(folder))  # (waiting for idle nodes
        assert back.returncode == 0, back.stderr                                # would time out: busy runs)
        assert back.stdout.startswith("minislurm cluster is up again: 1 nodes"), back.stdout
        assert (folder / "jwt_hs256.key").read_bytes() == key and (folder / "slurm.conf").read_text() == conf
        queue = minislurm("squeue", "-h", "-o", "%i %T", "-S", "i", env={**env, "SLURM_JWT": token})
        assert queue.returncode == 0, queue.stderr
        assert queue.stdout.splitlines()[0] == f"{held} PENDING" and queue.stdout.split()[2] == busy

        other = minislurm("cluster", "up", "--nodes", "3", "--dir", str(folder))
        assert other.returncode == 1 and other.stderr.startswith(
            f"minislurm cluster: error: {folder} holds a cluster already and it was not made with --nodes 3.")
        assert (folder / "jwt_hs256.key").read_bytes() == key
    finally:
        down = minislurm("cluster", "down", "--dir", str(folder))
    assert down.returncode == 0 and minislurm("cluster", "status", "--dir", str(folder)).returncode == 1
