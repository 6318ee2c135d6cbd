"""Distributed training under minislurm: the cost of a node failure, of a checkpoint, of Slurm.

On a local cluster of 3 nodes x 4 GPUs with the lab defaults (SlurmdTimeout 5 s, requeue
delay 2 s), ``examples/ddp`` runs 8 ranks on 2 nodes.  Measured, as medians over ``--repeat``:

* node failure: from the crash of one node (agent and ranks killed) to the controller marking it
  DOWN, to the job running again (on the healthy nodes), to training progress past the checkpoint;
* checkpoint write time (rank 0, atomic write of model, optimizer and 8 RNG states);
* overhead: the same 8 training processes run by minislurm (sbatch to COMPLETED) and started by
  hand with torchrun-style variables.
Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from minislurm.cluster import LocalCluster, wait_for
from minislurm.core.hostlist import expand

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ddp"
ARGS = ["--steps", "100", "--step-time", "0.05"]


def until(test, timeout=180.0):
    return wait_for(test, timeout, step=0.02)


def failure_run(c: LocalCluster, work: Path) -> dict:
    api = c.client()
    out = c.run("sbatch", "train.sbatch", *ARGS, cwd=str(work), check=True).stdout
    job = int(out.split()[-1])
    log = work / f"ddp-{job}.out"
    until(lambda: log.exists() and "step 40:" in log.read_text())
    victim = expand(api.call("GET", f"/jobs/{job}")["nodes"])[-1]
    t0 = time.time()
    c.kill_node(victim)
    node = lambda: next(n for n in api.call("GET", "/nodes")["nodes"] if n["name"] == victim)  # noqa: E731
    until(lambda: node()["state"].startswith("down"))
    down = time.time()
    until(lambda: (j := api.call("GET", f"/jobs/{job}"))["state"] == "RUNNING" and j["restart_count"] == 1)
    running = time.time()
    until(lambda: "restart 1 | step" in log.read_text())
    progress = time.time()
    until(lambda: api.call("GET", f"/jobs/{job}")["state"] not in ("PENDING", "RUNNING"))
    c.start_node(victim)
    c.wait_nodes(180.0)
    writes = [float(x) for x in re.findall(r"checkpoint written in ([\d.]+) ms", log.read_text())]
    return {"down_s": down - t0, "running_again_s": running - t0, "past_checkpoint_s": progress - t0,
            "checkpoint_ms": writes}


def under_minislurm(c: LocalCluster, work: Path) -> float:
    api = c.client()
    t0 = time.time()
    job = int(c.run("sbatch", "train.sbatch", *ARGS, cwd=str(work), check=True).stdout.split()[-1])
    until(lambda: api.call("GET", f"/jobs/{job}")["state"] not in ("PENDING", "RUNNING"))
    return time.time() - t0


def by_hand(work: Path, ranks: int = 8) -> float:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ckpt = work / f"hand-{time.time_ns()}"
    t0 = time.time()
    procs = []
    for rank in range(ranks):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": str(ranks), "LOCAL_RANK": str(rank % 4),
               "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        env = {k: v for k, v in env.items() if not k.startswith("SLURM_")}
        procs.append(subprocess.Popen([sys.executable, "train_ddp.py", *ARGS, "--ckpt-dir", str(ckpt),
                                       "--final", str(ckpt / "final.pt")], cwd=work, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    codes = [p.wait() for p in procs]
    if any(codes):
        raise RuntimeError(f"a rank failed: {codes}")
    return time.time() - t0


def med(xs: list[float]) -> float:
    return round(statistics.median(xs), 2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        for name in ("train_ddp.py", "train.sbatch"):
            shutil.copy(EXAMPLE / name, work / name)
        with LocalCluster(nodes=3, gpus_per_node=4, dir=Path(tmp) / "cluster") as c:
            timeout = c.config.slurmd_timeout
            runs = [failure_run(c, work) for _ in range(args.repeat)]
            slurm = [under_minislurm(c, work) for _ in range(args.repeat)]
        hand = [by_hand(work) for _ in range(args.repeat)]
    writes = [w for r in runs for w in r["checkpoint_ms"]]
    print(json.dumps({
        "bench": "training", "ranks": 8, "nodes": 2, "steps": 100, "repeat": args.repeat,
        "slurmd_timeout_s": timeout, "requeue_delay_s": 2,
        "failure": {key: med([r[key] for r in runs]) for key in ("down_s", "running_again_s", "past_checkpoint_s")},
        "failure_all": [{k: round(v, 2) for k, v in r.items() if k != "checkpoint_ms"} for r in runs],
        "checkpoint_write_ms": {"median": med(writes), "max": round(max(writes), 1), "samples": len(writes)},
        "run_s": {"minislurm": med(slurm), "by_hand": med(hand),
                  "overhead_s": round(statistics.median(slurm) - statistics.median(hand), 2)},
        "python": sys.version.split()[0], "cores": os.cpu_count(),
    }))


if __name__ == "__main__":
    main()
