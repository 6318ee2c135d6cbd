"""What a Parsl user does, run by the client virtualenv's Python against a live cluster.

    python parsl_session.py FOLDER      (SLURM_CONF and PATH aim at the cluster)

Two blocks of a HighThroughputExecutor on SlurmProvider: two Slurm jobs, apps spread over
them, the blocks cancelled at cleanup.  Prints one JSON object.  Nothing here imports minislurm.
"""

import json
import os
import subprocess
import sys
import time

import parsl
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.providers import SlurmProvider


@parsl.python_app
def which_job(x):
    import os
    return x * 2, os.environ.get("SLURM_JOB_ID")


def squeue():
    out = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def main(folder):
    provider = SlurmProvider(partition="gpu", nodes_per_block=1, init_blocks=2, min_blocks=2, max_blocks=2,
                             walltime="00:10:00", worker_init=f"export PATH={os.path.dirname(sys.executable)}:$PATH")
    htex = HighThroughputExecutor(label="slurm", address="127.0.0.1", max_workers_per_node=2, provider=provider)
    dfk = parsl.load(Config(executors=[htex], run_dir=folder, strategy="none"))
    results = [which_job(i) for i in range(20)]
    values = [r.result(timeout=180) for r in results]
    jobs = squeue()
    status = {job_id: s.state.name for job_id, s in
              zip(htex.blocks_to_job_id.values(), provider.status(list(htex.blocks_to_job_id.values())))}
    dfk.cleanup()
    deadline = time.time() + 60
    while squeue() and time.time() < deadline:
        time.sleep(0.5)
    return {"doubled": [v for v, _ in values], "jobs_used": sorted({j for _, j in values}), "squeue": jobs,
            "provider_status": status, "left": squeue()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
