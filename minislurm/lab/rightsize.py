"""A job to right-size from ``seff``: lab 10 runs it as a team's template asks (eight CPUs, 6 GB)
and the learner resubmits it asking for what it uses.

``prep.py`` starts :data:`WORKERS` processes that each hold 100 MiB at the same time, so its peak
memory is the same on every run; its CPU use is not (a busy machine stretches the elapsed time),
so the check counts the CPUs asked for against the workers, and the memory against the peak the
run itself measured.  :func:`run_prep` runs a batch script on a fresh cluster and returns the job
and its steps as accounting has them, for the check to say what it saw.
"""

from __future__ import annotations

WORKERS = 3

PREP = f'''import multiprocessing as mp
import time


def work(ready):
    features = bytearray(100 << 20)         # 100 MiB of features, touched
    for k in range(0, len(features), 4096):
        features[k] = 1
    ready.wait()                            # every worker holds its features at once
    t = time.process_time()
    while time.process_time() - t < 0.2:    # a little work for one CPU
        pass
    time.sleep(1)


if __name__ == "__main__":
    ready = mp.Barrier({WORKERS})
    workers = [mp.Process(target=work, args=(ready,)) for _ in range({WORKERS})]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print(f"done: {{len(workers)}} workers, exit codes {{[w.exitcode for w in workers]}}")
'''

TEMPLATE = """#!/bin/bash
#SBATCH --cpus-per-task=8
#SBATCH --mem=6G
#SBATCH --time=10
srun python prep.py
"""


def run_prep(script: str, **cluster) -> tuple[dict | None, list[dict], str]:
    """Submit ``script`` (which runs prep.py) to a fresh one-node cluster (``cluster``: its
    settings, e.g. ``cpus_per_node=8, mem=8000``) and wait for it to end: (the job, or None when
    sbatch refused it; its steps, each ``{"id", "cpus", "cpus_per_task", "peak_mb"}``; sbatch's
    message and the job's output)."""
    from minislurm.lab.terminal import lab_cluster

    with lab_cluster(nodes=1, quiet=True, **cluster) as sh:
        sh.write("prep.py", PREP, show=False)
        sh.write("prep.sh", script, show=False)
        out = sh("sbatch prep.sh", show=False)
        if not out or "Submitted batch job" not in out:
            return None, [], sh.last.stderr.strip()
        job = int(out.split()[-1])
        sh.wait(job, timeout=180)
        records = sh.api.call("GET", "/acct", query={"jobs": str(job)})["records"]
        steps = [{"id": f"{job}.{r['step']}", "cpus": r.get("alloc_cpus") or 0, "cpus_per_task": r.get("cpus_per_task", 1),
                  "peak_mb": (r.get("max_rss") or 0) / 1024} for r in records if r["step"] is not None]
        return sh.job(job), steps, sh.read(f"slurm-{job}.out")
