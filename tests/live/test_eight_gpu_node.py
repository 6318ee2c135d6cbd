"""The AI-cluster shape on the local cluster: one node with 8 GPUs and ``srun -N1
--ntasks-per-node=8 --gres=gpu:8 python train_ddp.py`` (8 ranks, one GPU each by its local
rank), as tests/docker/test_cluster.py runs it on containers.  Its weights equal those of the
same 8 ranks spread over two nodes, bit for bit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.live
# DDP's rendezvous port follows the job id (distenv.port_for) and every local cluster's nodes
# share this machine's ports, so each module that trains numbers its jobs from elsewhere
# (FirstJobId; test_training.py from 3001, the demo test from 1), as xdist runs them at once:
# job 2 of two modules once took the same port, and one's ranks waited on the other's store.
CLUSTER = {"nodes": 2, "gpus_per_node": 8, "cpus_per_node": 16, "first_job_id": 5001}
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp"
TRAIN = ["--steps", "40", "--ckpt-every", "20"]


def load(path: Path) -> dict:
    return torch.load(path, weights_only=True)


def test_eight_ranks_on_one_node_match_eight_on_two(live):
    live.reset()
    for name in ("train.sbatch", "train_ddp.py"):
        shutil.copy(EXAMPLE / name, live.work / name)
    r = live.run("srun", "-N1", "--ntasks-per-node=8", "--gres=gpu:8", "bash", "-c",
                 'echo "$SLURM_PROCID $SLURM_LOCALID $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"')
    assert r.returncode == 0, r.stderr
    rows = sorted(tuple(line.split()) for line in r.stdout.splitlines())
    assert rows == [(str(i), str(i), "gpu01", "0,1,2,3,4,5,6,7") for i in range(8)]
    r = live.run("srun", "-N1", "--ntasks-per-node=8", "--gres=gpu:8", "python", "train_ddp.py", *TRAIN,
                 "--ckpt-dir", "ckpt-one", "--final", "one-node.pt", timeout=300)
    assert r.returncode == 0 and "starting at step 0 on 8 ranks" in r.stdout, r.stderr
    two = live.sbatch("train.sbatch", *TRAIN, "--final", "two-nodes.pt")  # 2 nodes x 4 ranks
    assert live.wait(two, timeout=300)["state"] == "COMPLETED"
    a, b = load(live.work / "one-node.pt"), load(live.work / "two-nodes.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
