"""Run by every task of ``srun ... python -m minislurm.lab.srun_probe``: print what this task sees.

One JSON line: the Slurm task variables the lessons look at, and the torch.distributed values
:func:`minislurm.train.distenv.from_slurm` derives from them (RANK, LOCAL_RANK, ...).  The
master address is left as the host name, so no name lookup can stall a lesson.
"""

from __future__ import annotations

import json
import os
import sys

from minislurm.train.distenv import from_slurm

VARS = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURMD_NODENAME",
        "SLURM_NTASKS", "SLURM_NNODES", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE",
        "CUDA_VISIBLE_DEVICES")


def probe(environ=None) -> dict:
    env = os.environ if environ is None else environ
    dist = from_slurm(env, resolve_host=lambda host: host)
    return {"env": {k: env[k] for k in VARS if k in env},
            "torch": {"RANK": dist.rank, "LOCAL_RANK": dist.local_rank, "WORLD_SIZE": dist.world_size,
                      "LOCAL_WORLD_SIZE": dist.local_world_size, "GROUP_RANK": dist.node_rank,
                      "MASTER_ADDR": dist.master_addr, "MASTER_PORT": dist.master_port}}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(probe()) + "\n")
