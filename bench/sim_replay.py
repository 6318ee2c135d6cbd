"""Replay the full Philly-derived trace (111,549 jobs) on 320 nodes x 8 GPUs.

Conservative backfill (bf_max_job_test=500) and EASY, each run ``--repeat`` times; medians.
Targets on a 2-core machine: conservative <= 60 s, EASY <= 30 s, i.e. >= 2,000 jobs/s
(the published Python simulator anchor is 180-390 jobs/s: Alibaba PAI, 20,000 jobs in
51-111 s).  Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path

from minislurm.sim.replay import ReplayOptions, replay

TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "rfold_philly_trace.csv"
TARGET_S = {"conservative": 60.0, "easy": 30.0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--limit-jobs", type=int)
    args = p.parse_args()
    out: dict = {"bench": "sim_replay", "trace": TRACE.name, "nodes": 320, "gpus_per_node": 8,
                 "bf_max_job_test": 500, "repeat": args.repeat,
                 "python": sys.version.split()[0], "machine": platform.machine()}
    for policy in ("conservative", "easy"):
        walls, summary = [], None
        for _ in range(args.repeat):
            opts = ReplayOptions(trace=str(TRACE), nodes=320, cpus_per_node=32, gpus_per_node=8, policy=policy,
                                 bf_max_job_test=500, limit_jobs=args.limit_jobs, charts=False)
            summary = replay(opts, None)
            walls.append(summary["wall_s"])
            print(f"{policy}: {summary['jobs']} jobs in {summary['wall_s']:.1f} s", file=sys.stderr)
        wall = statistics.median(walls)
        out[policy] = {
            "jobs": summary["jobs"], "wall_s_median": round(wall, 2), "wall_s_all": [round(w, 2) for w in walls],
            "jobs_per_s": round(summary["jobs"] / wall), "target_s": TARGET_S[policy],
            "met": wall <= TARGET_S[policy], "utilization": round(summary["utilization"], 4),
            "wait_mean_s": round(summary["wait_mean_s"], 1), "wait_p95_s": round(summary["wait_p95_s"], 1),
            "bsld_mean": round(summary["bsld_mean"], 3), "backfilled": summary["backfilled"],
            "passes": summary["passes"],
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
