"""GPU indices on a live cluster: many concurrent jobs of 1-4 GPUs on two 4-GPU nodes, and no
index is ever held by two jobs at the same time (reference section 4)."""

from __future__ import annotations

import itertools
import random

import pytest

from livekit import until

pytestmark = pytest.mark.live

# (options, GPUs per node, nodes)
REQUESTS = [(["--gres=gpu:1"], 1, 1), (["--gres=gpu:2"], 2, 1), (["--gpus-per-node=3"], 3, 1),
            (["--gres=gpu:4"], 4, 1), (["-N2", "--gres=gpu:1"], 1, 2), (["-N2", "--gpus-per-node=2"], 2, 2)]
SCRIPT = """#!/bin/bash
echo "batch $SLURMD_NODENAME $SLURM_JOB_GPUS $CUDA_VISIBLE_DEVICES $SLURM_GPUS_ON_NODE"
srun --ntasks-per-node=1 bash -c 'echo "step $SLURMD_NODENAME $SLURM_STEP_GPUS $CUDA_VISIBLE_DEVICES"'
sleep {sleep}
"""


def test_gpu_indices_are_never_shared_by_running_jobs(live):
    rng = random.Random(7)
    submitted = {}
    for _ in range(30):
        options, per_node, nodes = rng.choice(REQUESTS)
        script = SCRIPT.format(sleep=rng.choice(["0.2", "0.5", "0.8", "1.2"]))
        job_id = live.sbatch(*options, "-o", "gpu-%j.out", script=script)
        submitted[job_id] = (per_node, nodes)
    jobs = {j: live.wait(j, timeout=90) for j in submitted}
    assert {j["state"] for j in jobs.values()} == {"COMPLETED"}

    for job_id, job in jobs.items():
        per_node, nodes = submitted[job_id]
        assert len(job["gpus"]) == nodes and all(len(g) == per_node for g in job["gpus"].values())
        assert all(len(set(g)) == len(g) and set(g) <= {0, 1, 2, 3} for g in job["gpus"].values())
        # what the processes saw is what the controller handed out
        lines = (live.work / f"gpu-{job_id}.out").read_text().splitlines()
        first = job["nodes"].replace("gpu[01-02]", "gpu01")
        ids = ",".join(map(str, job["gpus"][first]))
        assert lines[0] == f"batch {first} {ids} {ids} {per_node}"
        steps = sorted(line for line in lines[1:])
        assert steps == sorted(f"step {n} {','.join(map(str, g))} {','.join(map(str, g))}"
                               for n, g in job["gpus"].items())

    overlapping = 0
    for (a, ja), (b, jb) in itertools.combinations(jobs.items(), 2):
        if ja["start_time"] < jb["end_time"] and jb["start_time"] < ja["end_time"]:
            overlapping += 1
            for node in set(ja["gpus"]) & set(jb["gpus"]):
                assert not set(ja["gpus"][node]) & set(jb["gpus"][node]), (a, b, node)
    assert overlapping >= 10  # the jobs really did run side by side


def test_node_view_tracks_allocated_gpus(live):
    live.reset()
    job_id = live.sbatch("--gres=gpu:3", "--wrap", "sleep 30")
    job = live.wait(job_id, "RUNNING")
    node = job["nodes"]
    assert live.node(node)["alloc_gpus"] == job["gpus"][node]
    assert live.node(node)["state"] == "mix"
    live.run("scancel", str(job_id))
    live.wait(job_id)
    until(lambda: live.node(node)["alloc_gpus"] == [], 10, "the GPUs to be released")
