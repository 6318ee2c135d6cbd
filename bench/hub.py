"""JupyterHub on the docker cluster (``cluster up --docker --hub``, 4 nodes x 8 GPUs): how long a
student waits, and how many students the cluster holds on this machine (BENCHMARKS.md).

* login -> running server: the login form, an API token, the spawn, until the hub reports the
  server ready (its Slurm job started, the server answered); ``--login-runs`` students one
  after another, median and all runs;
* capacity: more students start servers, ``--batch`` at a time, until the cluster or this
  machine says no (a spawn fails or times out, a job stays pending) or ``--cap`` servers run;
  then the RSS of every server process (read from /proc on its node), each node container's
  memory (docker stats), the hub container's, and this machine's available memory before and
  after.  The cluster is removed at the end.
Needs root, a Docker engine and the image (``make cluster-image``).  Prints one JSON object on
its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "docker"))
from hubkit import Student  # noqa: E402

from minislurm.cluster import DockerCluster  # noqa: E402
from minislurm.cluster.confgen import free_port  # noqa: E402

PASSWORD = "bench-password"


def available_mb() -> float:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:")) / 1024


def container_mb(c: DockerCluster, names: list[str]) -> dict[str, float]:
    r = subprocess.run(["docker", "stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}",
                        *[c.container(n) for n in names]], capture_output=True, text=True, check=True)
    units = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}
    out = {}
    for line in r.stdout.splitlines():
        name, usage = line.split(" ", 1)
        value = usage.split("/")[0].strip()
        unit = next(u for u in units if value.endswith(u))
        out[name.removeprefix(f"{c.project}-")] = round(float(value[:-len(unit)]) * units[unit], 1)
    return out


RSS = """import os
for p in filter(str.isdigit, os.listdir('/proc')):
    try:
        argv = open(f'/proc/{p}/cmdline').read().split(chr(0))
        status = open(f'/proc/{p}/status').read()
    except OSError:
        continue
    if any(a.endswith('/batchspawner-singleuser') for a in argv):
        print(status.split('VmRSS:')[1].split()[0])
"""


def server_rss_mb(c: DockerCluster) -> list[float]:
    """RSS of every notebook server process, on every node."""
    out = []
    for node in c.node_names:
        r = subprocess.run(["docker", "exec", c.container(node), "python", "-c", RSS], capture_output=True,
                           text=True, check=True)
        out += [round(int(kb) / 1024, 1) for kb in r.stdout.split()]
    return out


def spawn(c: DockerCluster, name: str, timeout: float) -> tuple[Student, float]:
    """One student: login form -> token -> spawn -> ready; the seconds it took."""
    s = Student(c.hub_url, name)
    t0 = time.time()
    if s.login(PASSWORD).status_code != 302:
        raise RuntimeError(f"{name} could not log in")
    s.get_token()
    s.start()
    s.wait_ready(timeout)
    return s, time.time() - t0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--login-runs", type=int, default=5)
    p.add_argument("--cap", type=int, default=30)
    p.add_argument("--batch", type=int, default=5)
    p.add_argument("--timeout", type=float, default=180, help="seconds a server may take to be ready")
    args = p.parse_args()
    out = {"bench": "hub", "cores": os.cpu_count(), "available_mb_before": round(available_mb())}
    with tempfile.TemporaryDirectory() as tmp:
        c = DockerCluster(4, 8, dir=Path(tmp) / "cluster", hub_port=free_port())  # the image rebuilt if stale
        t0 = time.time()
        c.up(timeout=180)
        out["up_s"] = round(time.time() - t0, 1)
        students: list[Student] = []
        try:
            names = [f"s{i:02d}" for i in range(1, args.cap + 1)]
            added, errors = c.add_users(*names, passwords={n: PASSWORD for n in names})
            assert not errors, errors
            time.sleep(5)
            out["idle_mb"] = {"containers": container_mb(c, c.roles), "available": round(available_mb())}
            login = []
            for name in names[:args.login_runs]:
                s, took = spawn(c, name, args.timeout)
                students.append(s)
                login.append(took)
            out["login_to_ready_s"] = {"median": round(statistics.median(login), 1),
                                       "runs": [round(x, 1) for x in login]}
            stopped_by = f"the cap ({args.cap})"
            rest = names[args.login_runs:]
            with ThreadPoolExecutor(args.batch) as pool:
                for at in range(0, len(rest), args.batch):
                    batch = rest[at:at + args.batch]
                    results = list(pool.map(lambda n: _try(spawn, c, n, args.timeout), batch))
                    students += [r[0] for r in results if not isinstance(r, str)]
                    failed = [r for r in results if isinstance(r, str)]
                    if failed:
                        stopped_by = f"a spawn failed: {failed[0]}"
                        break
            time.sleep(5)
            rss = server_rss_mb(c)
            out["capacity"] = {"servers_ready": len(students), "stopped_by": stopped_by,
                               "pending_jobs": len(c.run("squeue", "-h", "-t", "PD").stdout.splitlines()),
                               "server_rss_mb": {"median": statistics.median(rss), "max": max(rss),
                                                 "total": round(sum(rss), 1), "count": len(rss)},
                               "containers_mb": container_mb(c, c.roles), "available_mb": round(available_mb())}
        finally:
            c.down()  # the hub, stopping, cancels every server's job
    print(json.dumps(out))


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 (a benchmark reports what stopped it)
        return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    main()
