"""Speed of the live cluster on this machine, against real Slurm 22.05 measured the same way.

Starts a 2-node local cluster and measures, each as a median:
* submit -> batch script start: from launching ``sbatch`` to the script's first line (target <= 100 ms);
* ``srun -N2 -n8 true`` wall time (target <= 0.25 s);
* one ``sbatch --wrap true`` command, wall time (target <= 80 ms);
* API submissions per second from concurrent clients, each acknowledged only after its durable
  commit (target >= 1,000 jobs/s).
Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from minislurm.cluster import LocalCluster

REAL_SLURM = {"submit_to_start_s": "0.20-0.75", "srun_N2_n8_true_s": 0.15, "sbatch_command_s": 0.009}


def _median_ms(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 1)


def submit_to_start(c: LocalCluster, work: Path, runs: int) -> list[float]:
    out = []
    for i in range(runs):
        stamp = work / f"start-{i}"
        t0 = time.time()
        c.run("sbatch", "-o", "/dev/null", "--wrap", f"date +%s.%N > {stamp}", cwd=str(work), check=True)
        while not stamp.exists() or not stamp.read_text().strip():
            time.sleep(0.002)
        out.append(float(stamp.read_text()) - t0)
    return out


def command_wall(c: LocalCluster, argv: list[str], runs: int, work: Path) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = c.run(*argv, cwd=str(work))
        out.append(time.perf_counter() - t0)
        if r.returncode:
            raise RuntimeError(f"{argv}: {r.stderr}")
    return out


def api_throughput(c: LocalCluster, work: Path, seconds: float = 5.0, clients: int = 8) -> dict:
    """Held jobs (they must not run), submitted as fast as concurrent clients can."""
    request = {"spec": {"hold": True, "job_name": "bench"}, "script": "#!/bin/sh\ntrue\n", "environment": {},
               "work_dir": str(work), "uid": os.getuid(), "gid": os.getgid(), "batch": True}
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        client = c.client()
        while time.perf_counter() < stop:
            client.call("POST", "/jobs", request)
            counts[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    total = sum(counts)
    return {"jobs": total, "seconds": round(elapsed, 2), "jobs_per_s": round(total / elapsed),
            "clients": clients}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        with LocalCluster(nodes=2, gpus_per_node=4, dir=Path(tmp) / "cluster") as c:
            command_wall(c, ["sbatch", "--wrap", "true", "-o", "/dev/null"], 3, work)  # warm caches
            starts = submit_to_start(c, work, 15)
            srun = command_wall(c, ["srun", "-N2", "-n8", "true"], 15, work)
            sbatch = command_wall(c, ["sbatch", "--wrap", "true", "-o", "/dev/null"], 25, work)
            throughput = api_throughput(c, work)
    out = {
        "bench": "live", "python": sys.version.split()[0], "machine": platform.machine(), "cores": os.cpu_count(),
        "submit_to_start_ms": {"median": _median_ms(starts), "min": round(min(starts) * 1000, 1), "target": 100},
        "srun_N2_n8_true_ms": {"median": _median_ms(srun), "min": round(min(srun) * 1000, 1), "target": 250},
        "sbatch_wrap_true_ms": {"median": _median_ms(sbatch), "min": round(min(sbatch) * 1000, 1), "target": 80},
        "api_submissions": {**throughput, "target_jobs_per_s": 1000},
        "real_slurm_22_05": REAL_SLURM,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
