"""squeue and sinfo on a big cluster against a small one, side by side: does the node count cost?

    python bench/scale_queue.py [--jobs 5000] [--runs 20] [--sizes 256,2]

For each size: a local cluster of that many 8-GPU nodes (virtual nodes past 8), ``--jobs`` held
jobs from one user, the controller's CPU share while idle (5 s), then whole ``sinfo`` and
``squeue`` commands timed ``--runs`` times.  Prints one line per measure and a JSON object last.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import tempfile
import time
from pathlib import Path

from live import command_wall  # bench/live.py
from squeue import fill, summary  # bench/squeue.py
from minislurm.cluster import LocalCluster


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=5000)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--sizes", default="256,2")
    args = p.parse_args()
    out = {}
    for nodes in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "work"
            work.mkdir()
            with LocalCluster(nodes=nodes, gpus_per_node=8, dir=Path(tmp) / "cluster") as c:
                fill(c, work, [getpass.getuser()], args.jobs)
                pid = c.procs["slurmctld"].pid
                before = cpu_seconds(pid)
                time.sleep(5)
                row = {"controller_idle_cpu_pct": round((cpu_seconds(pid) - before) / 5 * 100, 1)}
                for argv in (["sinfo"], ["squeue"]):
                    command_wall(c, argv, 2, work)
                    row[argv[0]] = summary(command_wall(c, argv, args.runs, work))
                    print(f"{nodes} nodes, {args.jobs} jobs: {argv[0]} median {row[argv[0]]['median']} ms, "
                          f"p99 {row[argv[0]]['p99']} ms", file=sys.stderr)
                out[str(nodes)] = row
    print(json.dumps({"bench": "scale_queue", "jobs": args.jobs, "results": out}))


if __name__ == "__main__":
    main()
