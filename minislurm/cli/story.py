"""The live part of ``minislurm demo``: data-parallel training survives a node crash.

On a cluster of 2 nodes x 4 GPUs (local processes, or with ``--docker`` containers): an
uninterrupted run of ``examples/ddp`` for reference, then the same job again; halfway through,
one node crashes (its agent and every process on it are killed; on containers, ``docker kill``
of the node).  The controller marks the node DOWN after SlurmdTimeout, requeues the job with
the same id, the node comes back, the job resumes from its last checkpoint, and its final
weights are compared bit for bit with the reference.  Everything shown is real.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from minislurm.cluster import Cluster, make_cluster, wait_for

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp"
TRAIN_ARGS = ("--steps", "100", "--step-time", "0.05")


class Story:
    def __init__(self, cluster: Cluster, work: Path):
        self.c, self.work = cluster, work
        self.api = cluster.client()

    def show(self, *argv: str) -> str:
        print(f"$ {' '.join(argv)}", flush=True)
        r = self.c.run(*argv, cwd=str(self.work))
        print((r.stdout + r.stderr).rstrip("\n") + "\n", flush=True)
        return r.stdout

    def job(self, job_id: int) -> dict:
        return self.api.call("GET", f"/jobs/{job_id}")

    def node(self, name: str) -> dict:
        return next(n for n in self.api.call("GET", "/nodes")["nodes"] if n["name"] == name)

    def until(self, test, timeout: float = 120.0):
        return wait_for(test, timeout, "the demo's next step (see the cluster logs)")

    def submit(self, final: str, shape: tuple[str, ...] = ()) -> int:
        """``shape``: sbatch options that override the script's 2 nodes x 4 GPUs."""
        return int(self.show("sbatch", *shape, "train.sbatch", *TRAIN_ARGS, "--final", final).split()[-1])

    def log(self, job_id: int) -> str:
        path = self.work / f"ddp-{job_id}.out"
        return path.read_text() if path.exists() else ""


def story(kind: str | None = None, nodes: int = 2, gpus_per_node: int = 4) -> bool:
    """The story on a cluster of ``kind`` (``local`` or ``docker``; default ``$MINISLURM_CLUSTER``)."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        cluster = make_cluster(nodes, gpus_per_node, kind=kind, dir=Path(tmp) / "cluster")
        flag = " --docker" if cluster.kind == "docker" else ""
        print(f"$ minislurm cluster up{flag} --nodes {nodes} --gpus-per-node {gpus_per_node}", flush=True)
        with cluster as c:
            print(f"# {c.describe()}\n", flush=True)
            work = c.workdir("ddp-demo")
            c.put(EXAMPLE, work)
            s = Story(c, work)
            timeout = int(c.config.slurmd_timeout)
            victim = c.node_names[-1]
            s.show("sinfo")
            print(f"$ cat train.sbatch\n{(work / 'train.sbatch').read_text()}")
            ranks = f"{nodes * gpus_per_node} ranks ({nodes} nodes x {gpus_per_node} GPUs)"
            print(f"# 1. An uninterrupted run, for reference: {ranks}, 100 steps.\n")
            shape = () if (nodes, gpus_per_node) == (2, 4) else \
                (f"--nodes={nodes}", f"--ntasks-per-node={gpus_per_node}", f"--gres=gpu:{gpus_per_node}")
            ref = s.submit("reference.pt", shape)
            s.until(lambda: s.job(ref)["state"] not in ("PENDING", "RUNNING"))
            print(s.log(ref))

            print(f"# 2. The same job again.  At step 40 (a checkpoint), node {victim} crashes.\n")
            job = s.submit("resumed.pt", shape)
            s.until(lambda: "step 40:" in s.log(job))
            s.show("squeue")
            crash = time.time()
            c.kill_node(victim)
            how = f"docker kill {c.container(victim)}: the container" if c.kind == "docker" else "its agent"
            print(f"# {victim} crashed ({how} and the ranks on it are gone).  The controller pings every node; "
                  f"after SlurmdTimeout ({timeout} s) of silence it marks {victim} DOWN.\n")
            s.until(lambda: s.node(victim)["state"].startswith("down"), timeout + 30)
            down = time.time()
            s.show("sinfo")
            s.show("squeue")
            print(f"# The job is back in the queue with the same id and SLURM_RESTART_COUNT=1; it needs "
                  f"{nodes} nodes, so it waits.  {victim} reboots (its agent starts again).\n")
            c.start_node(victim)
            s.until(lambda: s.job(job)["state"] == "RUNNING" and s.job(job)["restart_count"] == 1)
            rerun = time.time()
            s.until(lambda: "restart 1 | step" in s.log(job))
            progress = time.time()
            s.until(lambda: s.job(job)["state"] not in ("PENDING", "RUNNING"))
            print(f"$ cat ddp-{job}.out   # both runs, one log (--open-mode=append)\n"
                  + "\n".join(line for line in s.log(job).splitlines() if not line.startswith("[rank")) + "\n")
            s.show("sacct", "-D", "-j", str(job))
            a = torch.load(work / "reference.pt", weights_only=True)
            b = torch.load(work / "resumed.pt", weights_only=True)
            same = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
            print(f"# Final weights, resumed run vs uninterrupted run: "
                  f"{'bitwise identical' if same else 'DIFFERENT'} ({sum(v.numel() for v in a.values())} numbers)")
            print(f"# Timeline: crash -> DOWN {down - crash:.1f} s, -> running again {rerun - crash:.1f} s "
                  f"(after the node's return), -> past the checkpoint {progress - crash:.1f} s\n")
            print(f"$ minislurm cluster down{flag}", flush=True)
        gone = "containers, network and volumes removed" if cluster.kind == "docker" else \
            "controller and agents stopped; no process left behind"
        print(f"{gone}\n")
        return same
