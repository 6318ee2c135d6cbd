"""The docker cluster against the local one, side by side in one run (BENCHMARKS.md).

For each kind, a cluster of 4 nodes x 8 GPUs (the image already built), measuring:
* ``up``: from nothing to every node idle (docker target <= 20 s);
* in a shell on the login node (the docker cluster's login container; for the local cluster,
  this machine), as a user types: submit -> batch script start, median of 15 (docker target
  <= 150 ms); ``srun -N2 -n8 true`` wall time, median of 15 (docker target <= 300 ms); one
  ``sbatch --wrap true``, median of 15;
* the same from this machine's shell, where the docker cluster's commands go through
  ``docker exec`` (``minislurm env --docker``), and that ``docker exec`` alone;
* crash -> DOWN, 3 crashes (``docker kill`` of a node / SIGKILL of an agent), against SlurmdTimeout
  (target: within SlurmdTimeout + 1 s);
* memory of an idle node: each node container's (docker stats), each agent process's RSS.
With ``--build``, first the image from the cached base with no other cache (target <= 3 min).
Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from live import command_wall  # noqa: E402

from minislurm.cluster import DockerCluster, LocalCluster  # noqa: E402
from minislurm.cluster.engine import BUILD_SCRIPT  # noqa: E402


def _ms(xs: list[float]) -> dict:
    return {"median": round(statistics.median(xs) * 1000, 1), "min": round(min(xs) * 1000, 1)}


def submit_to_start(c, work: Path, runs: int) -> list[float]:
    """As bench/live.py's, with the stamp named relative to the job's folder (the same folder
    has another path inside the containers)."""
    out = []
    for i in range(runs):
        stamp = work / f"start-{i}"
        t0 = time.time()
        c.run("sbatch", "-o", "/dev/null", "--wrap", f"date +%s.%N > start-{i}", cwd=str(work), check=True)
        while not stamp.exists() or not stamp.read_text().strip():
            time.sleep(0.002)
        out.append(float(stamp.read_text()) - t0)
    return out


SHELL_LOOP = r"""
for i in $(seq {runs}); do
  t0=$(date +%s.%N); sbatch -o /dev/null --wrap "date +%s.%N > start-sh-$i" >/dev/null
  while [ ! -s start-sh-$i ]; do sleep 0.002; done; echo start $t0 $(cat start-sh-$i)
done
for i in $(seq {runs}); do t0=$(date +%s.%N); srun -N2 -n8 true; echo srun $t0 $(date +%s.%N); done
for i in $(seq {runs}); do t0=$(date +%s.%N); sbatch -o /dev/null --wrap true >/dev/null; echo sbatch $t0 $(date +%s.%N); done
"""


def in_shell(c, work: Path, runs: int) -> dict:
    """The three measures in one shell on the login node."""
    script = SHELL_LOOP.format(runs=runs)
    if c.kind == "docker":
        r = c.run("bash", "-c", script, cwd=str(work), check=True, timeout=600)
    else:  # the login node is this machine: a shell with the cluster's commands on PATH
        r = subprocess.run(["bash", "-c", script], cwd=work, env=c.env(), capture_output=True, text=True,
                           check=True, timeout=600)
    took: dict[str, list[float]] = {}
    for line in r.stdout.splitlines():
        what, t0, t1 = line.split()
        took.setdefault(what, []).append(float(t1) - float(t0))
    return {"submit_to_start_ms": _ms(took["start"]), "srun_N2_n8_true_ms": _ms(took["srun"]),
            "sbatch_wrap_true_ms": _ms(took["sbatch"])}


def crash_to_down(c, node: str, runs: int) -> list[float]:
    api = c.client()

    def state() -> str:
        return next(n for n in api.call("GET", "/nodes")["nodes"] if n["name"] == node)["state"]
    out = []
    for _ in range(runs):
        t0 = time.time()
        c.kill_node(node)
        while not state().startswith("down"):
            time.sleep(0.02)
        out.append(time.time() - t0)
        c.start_node(node)
        c.wait_nodes(60)
    return out


def memory_mb(c) -> list[float]:
    """Idle memory of each node: its container's (docker stats), or its agent process's RSS."""
    if c.kind == "docker":
        names = [c.container(n) for n in c.node_names]
        r = subprocess.run(["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", *names],
                           capture_output=True, text=True, check=True)
        units = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}
        out = []
        for line in r.stdout.splitlines():
            value = line.split("/")[0].strip()
            unit = next(u for u in units if value.endswith(u))
            out.append(round(float(value[:-len(unit)]) * units[unit], 1))
        return out
    out = []
    for name, proc in c.procs.items():
        if name.startswith("slurmd-"):
            with open(f"/proc/{proc.pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            out.append(round(rss / 1024, 1))
    return out


def measure(kind: str, tmp: Path) -> dict:
    folder = tmp / kind
    t0 = time.time()
    c = (DockerCluster(4, 8, dir=folder / "cluster", build=False) if kind == "docker"
         else LocalCluster(4, 8, dir=folder / "cluster"))
    c.up(timeout=120)
    up = time.time() - t0
    try:
        work = c.workdir()
        time.sleep(5)  # let start-up settle before the memory reading
        memory = memory_mb(c)
        command_wall(c, ["sbatch", "--wrap", "true", "-o", "/dev/null"], 3, work)  # warm caches
        shell = in_shell(c, work, 15)
        starts = submit_to_start(c, work, 15)
        srun = command_wall(c, ["srun", "-N2", "-n8", "true"], 15, work)
        sbatch = command_wall(c, ["sbatch", "--wrap", "true", "-o", "/dev/null"], 15, work)
        exec_only = command_wall(c, ["true"], 15, work) if c.kind == "docker" else None
        c.wait_nodes(60)
        down = crash_to_down(c, c.node_names[-1], 3)
        return {"up_s": round(up, 2), "login_shell": shell,
                "from_this_machine": {"submit_to_start_ms": _ms(starts), "srun_N2_n8_true_ms": _ms(srun),
                                      "sbatch_wrap_true_ms": _ms(sbatch),
                                      **({"docker_exec_true_ms": _ms(exec_only)} if exec_only else {})},
                "crash_to_down_s": [round(x, 2) for x in down], "slurmd_timeout_s": c.config.slurmd_timeout,
                "idle_node_memory_mb": memory}
    finally:
        c.down()


def build_seconds() -> float:
    """The image from the cached base, every other layer rebuilt (docker build --no-cache)."""
    t0 = time.time()
    subprocess.run(["sh", str(BUILD_SCRIPT), "-q", "--no-cache"], check=True, capture_output=True,
                   env={**os.environ, "PY": sys.executable})
    return round(time.time() - t0, 1)


def main() -> None:
    out = {"bench": "docker", "python": sys.version.split()[0], "machine": platform.machine(),
           "cores": os.cpu_count()}
    if "--build" in sys.argv:
        out["image_build_no_cache_s"] = build_seconds()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("local", "docker"):
            out[kind] = measure(kind, Path(tmp))
    out["targets"] = {"docker_up_s": 20, "image_build_s": 180, "docker_submit_to_start_ms": 150,
                      "docker_srun_N2_n8_true_ms": 300, "crash_to_down_s": "SlurmdTimeout + 1",
                      "idle_node_container_mb": 80}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
