"""False node failures under load: a 256 x 8 cluster runs lab 08b's full-size job (240 nodes,
one task each, a step every tenth of a second) while CPU burners hold the load average near
the target; nothing crashes, so every node the controller sets DOWN is a false failure.  At the
end one agent process is killed with SIGKILL and the time until its nodes are DOWN is taken
(the promise: within SlurmdTimeout + 2 s).

    python bench/heartbeat.py --minutes 10 --burners 6       # the target: lab 08b's job at a load of 8
    python bench/heartbeat.py --minutes 3 --burners 0 --fork # its tasks starting `sleep` every step

``--fork`` runs the job as lab 08b first wrote it, each step a `sleep` process (2,400 a second
over the 240 tasks); it now waits with bash's `read -t`, as a training step starts no process.

Prints one JSON object on its last line: false DOWN events (from the controller's log) while
the job runs, and apart those before it ran (agents slow to register at start),
node-seconds seen not responding (sinfo's ``*``), the load averages seen, and the kill -9 figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from minislurm.cluster import LocalCluster
from minislurm.core.hostlist import expand
from minislurm.lab.frontier import TRAIN_SCRIPT

DOWN_LINE = re.compile(r"Nodes (\S+) not responding, setting DOWN")


def _burn() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _nodes(api) -> list[dict]:
    return api.call("GET", "/nodes")["nodes"]


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--burners", type=int, default=6, help="CPU-bound processes beside the job")
    p.add_argument("--nodes", type=int, default=256)
    p.add_argument("--step", type=float, default=0.1, help="seconds a step takes (lab 08b: 0.1)")
    p.add_argument("--fork", action="store_true", help="each step a `sleep` process, as the job first was")
    args = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="minislurm-heartbeat-"))
    c = LocalCluster(nodes=args.nodes, gpus_per_node=8, cpus_per_node=32, mem=256_000, dir=root / "cluster")
    c.up(timeout=120)
    burners: list[subprocess.Popen] = []
    try:
        work = c.workdir()
        (work / "ckpt").mkdir(exist_ok=True)
        steps = int(args.minutes * 60 * 10) + 600  # outlasts the measurement
        steps = int(steps * 0.1 / args.step) + 60
        wait = f"sleep {args.step}" if args.fork else f"read -t {args.step} -u 3"
        script = TRAIN_SCRIPT.format(steps=steps, ckpt=50).replace("read -t 0.1 -u 3", wait)
        assert wait in script
        (work / "frontier.sbatch").write_text(script)
        r = c.run("sbatch", f"-N{args.nodes - 16}", "frontier.sbatch", cwd=str(work), check=True)
        job = int(r.stdout.split()[-1])
        api = c.client()
        deadline = time.time() + 120
        while api.call("GET", f"/jobs/{job}")["state"] != "RUNNING":
            assert time.time() < deadline, "the job did not start"
            time.sleep(0.5)
        seen = time.time()  # as the log stamps it: DOWN before this was at start
        running_at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seen)) + f",{int(seen % 1 * 1000):03d}"
        burners = [_burn() for _ in range(args.burners)]
        loads, starred = [], 0
        end = time.time() + args.minutes * 60
        while time.time() < end:
            time.sleep(1.0)
            loads.append(os.getloadavg()[0])
            starred += sum(1 for n in _nodes(api) if "NOT_RESPONDING" in n["flags"])
        log = (c.dir / "log" / "slurmctld.log").read_text()
        downs = [(line[1:24], len(expand(m.group(1)))) for line in log.splitlines() if (m := DOWN_LINE.search(line))]
        false_down = sum(n for at, n in downs if at >= running_at)
        down_at_start = sum(n for at, n in downs if at < running_at)
        state = api.call("GET", f"/jobs/{job}")
        # A real kill -9 of one agent process: all the nodes it hosts must go DOWN.
        unit, hosted = next((u, names) for u, names in c.agents.items() if u in c.procs)
        killed_at = time.time()
        os.kill(c.procs[unit].pid, signal.SIGKILL)
        while not all("down" in n["state"] for n in _nodes(api) if n["name"] in hosted):
            assert time.time() - killed_at < 60, "the killed agent's nodes never went DOWN"
            time.sleep(0.1)
        down_after = time.time() - killed_at
        # The same from the controller's log (its stamps, not this loop's polling of a busy API).
        after = [line for line in (c.dir / "log" / "slurmctld.log").read_text().splitlines()[len(log.splitlines()):]
                 if (m := DOWN_LINE.search(line)) and set(expand(m.group(1))) & set(hosted)]
        logged = max((time.mktime(time.strptime(line[1:20], "%Y-%m-%d %H:%M:%S")) + float("0." + line[21:24])
                      for line in after), default=None)
        timeout = float(str(api.call("GET", "/config")["config"]["SlurmdTimeout"]).split()[0])
        figures = {"nodes": args.nodes, "minutes": args.minutes, "burners": args.burners, "step_s": args.step,
                   "fork": args.fork,
                   "load_median": round(statistics.median(loads), 1), "load_max": round(max(loads), 1),
                   "false_down": false_down, "false_down_before_the_job_ran": down_at_start, "not_responding_node_seconds": starred,
                   "job_state": state["state"], "job_restarts": state["restart_count"],
                   "kill9_nodes": len(hosted), "kill9_down_after_s": round(down_after, 2),
                   "kill9_down_in_log_after_s": round(logged - killed_at, 2) if logged else None,
                   "slurmd_timeout_s": timeout}
    finally:
        for b in burners:
            b.kill()
        c.down()
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
