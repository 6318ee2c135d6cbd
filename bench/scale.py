"""A frontier lab's cluster on one machine: 256 nodes x 8 GPUs, live.

Measures, in one run:

* ``cluster up``: from start to every node idle (target <= 15 s), and the resident memory of
  the controller and every agent process once up (target <= 1.5 GB);
* ``srun -N256 --ntasks-per-node=1 true`` (target <= 1 s) and ``srun -N128 --ntasks-per-node=8
  true``, 1,024 tasks (target <= 3 s): whole commands, as a user types them, medians;
* ``squeue`` and ``sinfo`` with 5,000 jobs queued (held: they stay), medians and p99 (targets
  100 and 200 ms).

    python bench/scale.py [--nodes 256] [--gpus 8] [--nodes-per-agent K] [--runs 7] [--jobs 5000]

``--nodes-per-agent 1`` is the layout before virtual nodes (one process per node).  Prints a
table on stderr and one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from live import command_wall  # bench/live.py: the same timing of a whole command
from squeue import fill, summary  # bench/squeue.py: held jobs from ten users
from minislurm.cluster import LocalCluster


def rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (the daemons' job processes are none here)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration):
        return 0.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=256)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--nodes-per-agent", type=int)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--jobs", type=int, default=5000)
    p.add_argument("--query-runs", type=int, default=40)
    args = p.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    out: dict = {"bench": "scale", "python": sys.version.split()[0], "machine": platform.machine(),
                 "cores": os.cpu_count(), "nodes": args.nodes, "gpus_per_node": args.gpus}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        c = LocalCluster(nodes=args.nodes, gpus_per_node=args.gpus, dir=Path(tmp) / "cluster",
                         nodes_per_agent=args.nodes_per_agent)
        t0 = time.perf_counter()
        try:
            c.up(timeout=300)
            up_s = time.perf_counter() - t0
            time.sleep(2)  # settled: first pings answered
            rss = {name: rss_mb(proc.pid) for name, proc in c.procs.items()}
            out["nodes_per_agent"] = c.nodes_per_agent
            out["agent_processes"] = len(c.agents)
            out["cluster_up_s"] = round(up_s, 2)
            out["rss_mb"] = {"total": round(sum(rss.values())), "controller": round(rss["slurmctld"]),
                             "agents": round(sum(v for k, v in rss.items() if k != "slurmctld"))}
            print(f"cluster up {args.nodes}x{args.gpus} in {len(c.agents)} agent processes: {up_s:.1f} s, "
                  f"RSS {out['rss_mb']['total']} MB (controller {out['rss_mb']['controller']} MB)", file=sys.stderr)
            half = max(1, args.nodes // 2)
            for name, argv in ((f"srun_N{args.nodes}_1pn_true", ["srun", f"-N{args.nodes}", "--ntasks-per-node=1", "true"]),
                               (f"srun_N{half}_8pn_true", ["srun", f"-N{half}", "--ntasks-per-node=8", "true"])):
                command_wall(c, argv, 1, work)  # warm
                xs = command_wall(c, argv, args.runs, work)
                out[name] = {"median_s": round(statistics.median(xs), 3), "min_s": round(min(xs), 3),
                             "runs": [round(x, 3) for x in xs]}
                print(f"{' '.join(argv)}: median {statistics.median(xs):.2f} s (min {min(xs):.2f})", file=sys.stderr)
            if not args.jobs:
                return
            me = getpass.getuser()
            t0 = time.perf_counter()
            total = fill(c, work, [me, *(f"student{i:02d}" for i in range(1, 10))], args.jobs)
            out["queued_jobs"], out["fill_s"] = total, round(time.perf_counter() - t0, 1)
            for name, argv in (("squeue", ["squeue"]), ("sinfo", ["sinfo"]), ("sinfo -N", ["sinfo", "-N"])):
                command_wall(c, argv, 2, work)
                out[name] = summary(command_wall(c, argv, args.query_runs, work))
                print(f"{name} ({total} jobs): median {out[name]['median']} ms, p99 {out[name]['p99']} ms",
                      file=sys.stderr)
        finally:
            c.down()
            print(json.dumps(out))


if __name__ == "__main__":
    main()
