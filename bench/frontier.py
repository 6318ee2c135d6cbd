"""Llama 3's scale on one machine: 2,048 nodes x 8 GPUs (16,384 GPUs), live (issue 27 item 2).

Measures, on one ``LocalCluster(nodes=2048, gpus_per_node=8)`` (8 agent processes of 256
virtual nodes each):

* ``cluster up`` to every node idle (target <= 30 s), and the resident memory of the controller
  and the agents once up (target <= 3 GB);
* ``srun -N2048 true`` (target <= 3 s): wall time, and the CPU seconds it cost srun, the
  controller and the agents (their own, and their tasks': ``true`` and the shell that starts it);
* one ``sbatch`` of a 2,048-node job with ``--requeue`` in a reservation over every node: a node
  crashes while it runs, the job is requeued (NODE_FAIL, restart count 1), the node boots again
  and the job runs again to COMPLETED; how long each part took;
* ``squeue`` and ``sinfo`` with 5,000 jobs queued (target <= 300 ms): wall time, and the CPU
  seconds of the command and of the controller.

    python bench/frontier.py [--nodes 2048] [--runs 5] [--jobs 5000] [--query-runs 20] [--no-requeue]
    python bench/frontier.py --against OLD_TREE [--rounds 2]

``--against`` measures the minislurm package of OLD_TREE (``git archive`` of an older commit,
unpacked) and this one, alternately, each in a process of its own, and prints them side by side:
on a shared machine only figures taken back to back compare.  CPU seconds vary less with the
machine's load than wall times; both are printed with the load average.  Prints a table on
stderr and one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def tree(pid: int) -> list[int]:
    """A process and its descendants now (an agent's heartbeat process and tasks)."""
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    out += tree(int(child))
    except OSError:
        pass
    return out


def cpu(pid: int) -> tuple[float, float]:
    """(its own CPU seconds, those of the children it has reaped), from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks, (int(fields[13]) + int(fields[14])) / ticks


class Meter:
    """CPU seconds spent by each daemon (with its descendants) and by the commands this process
    ran, between :meth:`start` and :meth:`stop`."""

    def __init__(self, cluster):
        self.cluster = cluster

    def start(self) -> None:
        self.pids = {name: tree(p.pid) for name, p in self.cluster.procs.items()}
        self.before = {name: [cpu(p) for p in pids] for name, pids in self.pids.items()}
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.commands = usage.ru_utime + usage.ru_stime

    def stop(self) -> dict:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        own = tasks = 0.0
        out = {"command": round(usage.ru_utime + usage.ru_stime - self.commands, 2)}
        for name, pids in self.pids.items():
            after = [cpu(p) for p in pids]
            mine = sum(a[0] - b[0] for a, b in zip(after, self.before[name]))
            reaped = sum(a[1] - b[1] for a, b in zip(after, self.before[name]))
            if name == "slurmctld":
                out["controller"] = round(mine + reaped, 2)
            else:
                own, tasks = own + mine, tasks + reaped
        out.update(agents=round(own, 2), tasks=round(tasks, 2))
        return out


def load() -> float:
    return round(os.getloadavg()[0], 1)


def timed(cluster, meter: Meter, argv: list[str], work: Path) -> tuple[float, dict]:
    meter.start()
    t0 = time.perf_counter()
    r = cluster.run(*argv, cwd=str(work), timeout=600)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr[-2000:]}")
    return wall, meter.stop()


def series(cluster, meter: Meter, argv: list[str], runs: int, work: Path) -> dict:
    """Medians (and p99 of the walls) of ``runs`` whole commands, after one to warm up."""
    timed(cluster, meter, argv, work)
    walls, cpus, loads = [], [], []
    for _ in range(runs):
        wall, used = timed(cluster, meter, argv, work)
        walls.append(wall)
        cpus.append(used)
        loads.append(load())
    walls.sort()
    return {"median_s": round(statistics.median(walls), 3), "p99_s": round(walls[min(len(walls) - 1,
                                                                                   int(0.99 * len(walls)))], 3),
            "runs_s": [round(w, 3) for w in walls],
            "cpu_s": {k: round(statistics.median(c[k] for c in cpus), 2) for k in cpus[0]},
            "load": [min(loads), max(loads)]}


SCRIPT = """#!/bin/sh
echo "run $SLURM_RESTART_COUNT on $SLURM_JOB_NUM_NODES nodes"
srun true && echo "step done"
if [ "$SLURM_RESTART_COUNT" = 0 ]; then
  sleep 600  # the first run waits here for one of its nodes to fail
fi
"""


def requeue_run(cluster, work: Path, nodes: int) -> dict:
    """A reservation over every node; one job on all of them, --requeue; a node crashes while
    it runs; the node boots again; the job runs again and completes."""
    me = getpass.getuser()
    r = cluster.run("scontrol", "create", "reservation", "ReservationName=llama3", "StartTime=now",
                    "Duration=2:00:00", f"Users={me}", "Nodes=ALL", cwd=str(work))
    if r.returncode:
        raise RuntimeError(r.stderr)
    out = work / "llama3.out"
    t0 = time.perf_counter()
    job = int(cluster.run("sbatch", "--parsable", f"-N{nodes}", "--reservation=llama3", "--requeue",
                          "--open-mode=append", "-o", str(out), cwd=str(work), input=SCRIPT,
                          check=True).stdout.split(";")[0])
    client = cluster.client()

    def job_state() -> dict:
        return client.call("GET", f"/jobs/{job}")

    def until(test, what: str, timeout: float = 600) -> float:
        deadline = time.perf_counter() + timeout
        while not test():
            if time.perf_counter() > deadline:
                raise RuntimeError(f"job {job}: no {what} within {timeout} s: {job_state()}")
            time.sleep(0.2)
        return time.perf_counter()

    marks = {"submitted": t0}
    marks["step 1 done"] = until(lambda: out.exists() and "step done" in out.read_text(), "first step")
    victim = cluster.config.nodes[len(cluster.config.nodes) // 2].name
    cluster.crash_node(victim)
    marks["node crashed"] = time.perf_counter()
    marks["requeued"] = until(lambda: job_state()["restart_count"] >= 1, "requeue")
    cluster.restore_node(victim)
    marks["node back"] = until(lambda: client.call("GET", "/nodes")["nodes"] and not any(
        n["name"] == victim and n["state"].startswith("down") for n in client.call("GET", "/nodes")["nodes"]),
        "node back")
    marks["completed"] = until(lambda: job_state()["state"] in ("COMPLETED", "FAILED", "CANCELLED"), "end")
    final = job_state()
    sacct = cluster.run("sacct", "-j", str(job), "-D", "-X", "-n", "-P", "-o", "JobID,State,ExitCode,NNodes",
                        cwd=str(work)).stdout.split()
    names = list(marks)
    steps = {f"{a} -> {b}": round(marks[b] - marks[a], 1) for a, b in zip(names, names[1:])}
    return {"job": job, "state": final["state"], "restart_count": final["restart_count"], "crashed": victim,
            "durations_s": steps, "total_s": round(marks["completed"] - t0, 1), "sacct": sacct,
            "output": out.read_text().splitlines()}


def measure(args) -> dict:
    sys.path.insert(0, str(HERE))
    from squeue import fill  # bench/squeue.py: held jobs
    from scale import rss_mb  # bench/scale.py: a process's resident memory
    from minislurm.cluster import LocalCluster
    import minislurm
    out: dict = {"bench": "frontier", "tree": str(Path(minislurm.__file__).parent.parent), "python": sys.version.split()[0],
                 "machine": platform.machine(), "cores": os.cpu_count(), "nodes": args.nodes, "gpus_per_node": 8}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        c = LocalCluster(nodes=args.nodes, gpus_per_node=8, dir=Path(tmp) / "cluster")
        out["load_at_start"] = load()
        t0 = time.perf_counter()
        try:
            c.up(timeout=600)
            out["cluster_up_s"] = round(time.perf_counter() - t0, 1)
            time.sleep(3)  # settled: the first pings answered
            rss = {name: rss_mb(p.pid) for name, p in c.procs.items()}
            out["agent_processes"] = len(c.agents)
            out["rss_mb"] = {"total": round(sum(rss.values())), "controller": round(rss["slurmctld"])}
            say(f"cluster up {args.nodes} x 8 in {len(c.agents)} agent processes: {out['cluster_up_s']} s, "
                f"RSS {out['rss_mb']['total']} MB (load {load()})")
            meter = Meter(c)
            srun = series(c, meter, ["srun", f"-N{args.nodes}", "true"], args.runs, work)
            out[f"srun_N{args.nodes}_true"] = srun
            say(f"srun -N{args.nodes} true: median {srun['median_s']} s {srun['runs_s']}, CPU s {srun['cpu_s']} "
                f"(load {srun['load']})")
            if args.requeue:
                out["requeue"] = run = requeue_run(c, work, args.nodes)
                say(f"reserved -N{args.nodes} --requeue job, a node crashed: {run['state']}, restart count "
                    f"{run['restart_count']}, {run['total_s']} s: {run['durations_s']}")
            if args.jobs:
                out["queued_jobs"] = fill(c, work, [getpass.getuser()], args.jobs)
                time.sleep(2)
                for name in ("squeue", "sinfo"):
                    q = series(c, meter, [name], args.query_runs, work)
                    out[name] = q
                    say(f"{name} ({out['queued_jobs']} jobs): median {q['median_s'] * 1000:.0f} ms, p99 "
                        f"{q['p99_s'] * 1000:.0f} ms, CPU s {q['cpu_s']} (load {q['load']})")
        finally:
            c.down()
    return out


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def against(args) -> dict:
    """This tree and ``args.against``, alternately, each measured by a process of its own."""
    base = [sys.executable, __file__, "--nodes", str(args.nodes), "--runs", str(args.runs), "--jobs", str(args.jobs),
            "--query-runs", str(args.query_runs), "--no-requeue"]
    rounds: dict[str, list] = {"old": [], "new": []}
    for _ in range(args.rounds):
        for label, tree_dir in (("old", args.against), ("new", str(HERE.parent))):
            env = {**os.environ, "PYTHONPATH": tree_dir}
            say(f"-- {label}: {tree_dir}")
            r = subprocess.run(base, env=env, stdout=subprocess.PIPE, text=True, check=True)
            rounds[label].append(json.loads(r.stdout.strip().splitlines()[-1]))
    key = f"srun_N{args.nodes}_true"
    say(f"\n{'':34} {'old':>24} {'new':>24}")
    for label, pick in (("cluster up (s)", lambda o: o["cluster_up_s"]), ("RSS (MB)", lambda o: o["rss_mb"]["total"]),
                        (f"srun -N{args.nodes} true (s)", lambda o: o[key]["median_s"]),
                        ("  CPU: srun", lambda o: o[key]["cpu_s"]["command"]),
                        ("  CPU: controller", lambda o: o[key]["cpu_s"]["controller"]),
                        ("  CPU: agents", lambda o: o[key]["cpu_s"]["agents"]),
                        ("  CPU: tasks", lambda o: o[key]["cpu_s"]["tasks"]),
                        ("squeue (ms)", lambda o: o.get("squeue", {}).get("median_s", 0) * 1000),
                        ("  CPU: controller", lambda o: o.get("squeue", {}).get("cpu_s", {}).get("controller")),
                        ("sinfo (ms)", lambda o: o.get("sinfo", {}).get("median_s", 0) * 1000),
                        ("  CPU: controller", lambda o: o.get("sinfo", {}).get("cpu_s", {}).get("controller"))):
        cells = [", ".join(str(round(pick(o), 2)) for o in rounds[side]) for side in ("old", "new")]
        say(f"{label:34} {cells[0]:>24} {cells[1]:>24}")
    return {"bench": "frontier-against", "old": rounds["old"], "new": rounds["new"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=2048)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--jobs", type=int, default=5000)
    p.add_argument("--query-runs", type=int, default=20)
    p.add_argument("--no-requeue", dest="requeue", action="store_false")
    p.add_argument("--against", help="an older tree to measure alternately with this one")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    print(json.dumps(against(args) if args.against else measure(args)))


if __name__ == "__main__":
    main()
