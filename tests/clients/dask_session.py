"""What a dask-jobqueue user does, run by the client virtualenv's Python against a live cluster.

    python dask_session.py FOLDER      (SLURM_CONF and PATH aim at the cluster)

Prints one JSON object: what the user saw.  Nothing here imports minislurm.
"""

import json
import os
import subprocess
import sys
import time

from dask.distributed import Client
from dask_jobqueue import SLURMCluster


def squeue_mine():
    out = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def main(folder):
    os.makedirs(folder, exist_ok=True)
    cluster = SLURMCluster(cores=1, processes=1, memory="1GB", queue="gpu", walltime="00:10:00",
                           log_directory=folder, interface=None, scheduler_options={"host": "127.0.0.1"})
    script = cluster.job_script()
    cluster.scale(jobs=2)
    client = Client(cluster)
    client.wait_for_workers(2, timeout=120)
    jobs = squeue_mine()
    total = client.submit(sum, client.map(lambda x: x * x, range(100))).result()
    hosts = sorted(set(client.run(lambda: os.environ.get("SLURM_JOB_ID", "")).values()))
    client.close()
    cluster.close()
    deadline = time.time() + 60
    while squeue_mine() and time.time() < deadline:
        time.sleep(0.5)
    return {"script": script, "jobs": jobs, "total": total, "worker_job_ids": hosts, "left": squeue_mine()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
