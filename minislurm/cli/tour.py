"""The live part of ``minislurm demo``: a local 4-node GPU cluster, a few jobs, the commands.

Everything shown is real: a controller and four node agents start as local processes, the
jobs run, and the output is what the commands print.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from minislurm.cluster import LocalCluster

TRAIN = """#!/bin/bash
#SBATCH --job-name=ddp-demo
#SBATCH --nodes=2 --ntasks-per-node=4 --gres=gpu:4
#SBATCH --time=5 --output=%x-%j.out
srun bash -c 'echo "rank $SLURM_PROCID (local $SLURM_LOCALID) on $SLURMD_NODENAME, GPUs $CUDA_VISIBLE_DEVICES"'
sleep 4
"""


def _show(c: LocalCluster, work: Path, *argv: str) -> str:
    print(f"$ {' '.join(argv)}", flush=True)
    r = c.run(*argv, cwd=str(work))
    text = r.stdout + r.stderr
    print(text.rstrip("\n") + "\n", flush=True)
    return r.stdout


def _wait(c: LocalCluster, job_ids: list[int], timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        jobs = c.client().call("GET", "/jobs", query={"ids": ",".join(map(str, job_ids))})["jobs"]
        if all(j["state"] not in ("PENDING", "RUNNING") for j in jobs):
            return
        time.sleep(0.2)


def tour() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        print("$ minislurm cluster up --nodes 4 --gpus-per-node 8", flush=True)
        with LocalCluster(nodes=4, gpus_per_node=8, dir=Path(tmp) / "cluster") as c:
            print("4 node agents registered; every node is idle\n")
            _show(c, work, "sinfo")
            (work / "train.sbatch").write_text(TRAIN)
            print(f"$ cat train.sbatch\n{TRAIN}")
            ids = [int(_show(c, work, "sbatch", "train.sbatch").split()[-1])]
            ids.append(int(_show(c, work, "sbatch", "-N4", "--gres=gpu:8", "-t", "2", "-J", "pretrain",
                                 "--wrap", "sleep 3").split()[-1]))
            ids.append(int(_show(c, work, "sbatch", "-N1", "--gres=gpu:2", "-t", "1", "-J", "eval",
                                 "--wrap", "sleep 2").split()[-1]))
            time.sleep(1.5)  # one backfill cycle (bf_interval=1)
            _show(c, work, "squeue")
            _show(c, work, "squeue", "--start")
            _wait(c, ids)
            out = f"ddp-demo-{ids[0]}.out"
            print(f"$ cat {out}\n{(work / out).read_text()}", flush=True)
            _show(c, work, "sacct")
            print("$ minislurm cluster down", flush=True)
        print("controller and agents stopped; no process left behind\n")
