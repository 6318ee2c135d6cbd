"""One conservative backfill pass: 10,000 pending jobs on 1,000 nodes x 8 GPUs, bf_max_job_test=500.

The machine is full of running jobs (1-8 GPUs, limits from 1 h to 2 days, started at random
times in the past); the queue mixes 1-8 GPU jobs with 2-16 node jobs.  Target: <= 200 ms.
Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import sys
import time

from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Allocation, Job, Shape
from minislurm.core.state import ClusterState
from minislurm.sched.schedule import schedule

NODES, GPUS, PENDING, REPEAT = 1000, 8, 10_000, 7
LIMITS_H = [1, 2, 4, 8, 12, 24, 48]


def build(seed: int = 1) -> tuple[ClusterState, float]:
    rng = random.Random(seed)
    cfg = simple_cluster(NODES, cpus=64, mem=512_000, gpus=GPUS, bf_max_job_test=500)
    st = ClusterState(cfg)
    now = 10 * 86400.0
    # Fill every node: jobs of 1, 2, 4 or 8 GPUs until no GPU is free.
    for n in range(NODES):
        free = GPUS
        while free:
            g = rng.choice([g for g in (1, 2, 4, 8) if g <= free])
            job = Job(st.new_job_id(), partition="gpu", time_limit=rng.choice(LIMITS_H) * 3600.0,
                      shape=Shape(cpus=8 * g, mem=64_000 * g // 8, gpus=g))
            st.add(job)
            started = now - rng.uniform(0, job.time_limit)
            gpus = tuple(range(GPUS - free, GPUS - free + g))
            st.start(job, Allocation((n,), (8 * g,), (64_000 * g // 8,), (gpus,)), started)
            free -= g
    for i in range(PENDING):
        if rng.random() < 0.15:
            nodes, g = rng.choice([2, 4, 8, 16]), 8
        else:
            nodes, g = 1, rng.choice([1, 1, 2, 4, 8])
        job = Job(st.new_job_id(), partition="gpu", submit_time=now - PENDING + i, num_nodes=nodes,
                  time_limit=rng.choice(LIMITS_H) * 3600.0, shape=Shape(cpus=8 * g, mem=64_000 * g // 8, gpus=g))
        job.priority = 1_000_000 - i
        st.add(job)
    return st, now


def main() -> None:
    st, now = build()
    times, result = [], None
    for _ in range(REPEAT):
        st.reprioritized()  # a cold pass: the queue is sorted again, as after a new submission
        t0 = time.perf_counter()
        result = schedule(st, now, backfill_cycle=True)
        times.append(time.perf_counter() - t0)
    out = {
        "bench": "sched_pass",
        "nodes": NODES, "gpus_per_node": GPUS, "pending": PENDING, "running": len(st.running),
        "bf_max_job_test": st.config.sched.bf_max_job_test,
        "reserved": len(result.expected_start), "started": len(result.starts),
        "median_ms": round(statistics.median(times) * 1000, 1),
        "min_ms": round(min(times) * 1000, 1), "runs": REPEAT, "target_ms": 200,
        "python": sys.version.split()[0], "machine": platform.machine(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
