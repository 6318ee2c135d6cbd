"""squeue's latency on a full queue: the real command, end to end, as a user types it.

Starts a 2-node local cluster, fills its queue with held jobs (they pend for ever, so the
queue stays full) from ten users, through the API and concurrent clients, then times whole
``squeue`` processes (start to exit, output to a pipe) many times each:

* ``squeue``              every job (target p99 <= 200 ms)
* ``squeue -u <user>``    one user's tenth of the queue
* ``squeue -j <id>``      one job
* ``squeue --start``      pending jobs by expected start

first with 5,000 jobs, then with 10,000.  Prints a table and, on its last line, one JSON
object with the median, p95 and p99 of each (milliseconds).  ``--reference TREE`` also runs
each command once with another minislurm source tree first on PYTHONPATH (say an export of
an older commit) against the same cluster and says whether the outputs are identical.

    python bench/squeue.py [--runs 40] [--sizes 5000,10000] [--reference TREE]
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from live import command_wall  # bench/live.py: the same timing of a whole command
from minislurm.cluster import LocalCluster

OTHERS = [f"student{i:02d}" for i in range(1, 10)]  # nine more users besides the one running this


def fill(c: LocalCluster, work: Path, users: list[str], upto: int, clients: int = 8) -> int:
    """Submit held jobs, round robin over ``users``, until the queue holds ``upto``."""
    tokens = {u: c.client().call("POST", "/token", {"username": u, "lifespan": 86400})["token"] for u in users}
    have = len(c.client().call("GET", "/jobs")["jobs"])
    todo = list(range(have, upto))
    lock = threading.Lock()

    def worker() -> None:
        clients_by_user = {u: c.client(token=t) for u, t in tokens.items()}
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            user = users[i % len(users)]
            clients_by_user[user].call("POST", "/jobs", {
                "spec": {"hold": True, "job_name": f"train-{i % 97}", "time_limit_min": 60 + i % 240},
                "script": "#!/bin/sh\ntrue\n", "environment": {}, "work_dir": str(work),
                "uid": os.getuid(), "gid": os.getgid(), "batch": True})

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(c.client().call("GET", "/jobs")["jobs"])




def summary(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=100, method="inclusive")
    ms = lambda x: round(x * 1000, 1)  # noqa: E731
    return {"median": ms(statistics.median(xs)), "p95": ms(q[94]), "p99": ms(q[98]), "min": ms(min(xs)),
            "runs": len(xs)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--sizes", default="5000,10000")
    p.add_argument("--reference", help="a minislurm source tree whose squeue must print the same")
    args = p.parse_args()
    # As on any install, the commands run from cached bytecode: a PYTHONDONTWRITEBYTECODE left in
    # a development shell would make every squeue recompile minislurm (~40 ms more each).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    me = getpass.getuser()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        with LocalCluster(nodes=2, gpus_per_node=4, dir=Path(tmp) / "cluster") as c:
            for size in (int(s) for s in args.sizes.split(",")):
                t0 = time.perf_counter()
                total = fill(c, work, [me, *OTHERS], size)
                filled = time.perf_counter() - t0
                some = c.client().call("GET", "/jobs", query={"user": me})["jobs"][len(OTHERS)]["job_id"]
                commands = {"squeue": ["squeue"], "squeue -u": ["squeue", "-u", me],
                            "squeue -j": ["squeue", "-j", str(some)], "squeue --start": ["squeue", "--start"]}
                command_wall(c, ["squeue"], 2, work)  # warm the page cache
                row = {"jobs": total, "fill_s": round(filled, 1)}
                for name, argv in commands.items():
                    row[name] = summary(command_wall(c, argv, args.runs, work))
                    if args.reference:
                        text = c.run(*argv, cwd=str(work)).stdout
                        env = {"PYTHONPATH": os.pathsep.join([args.reference, os.environ.get("PYTHONPATH", "")])}
                        row[name]["same_as_reference"] = c.run(*argv, cwd=str(work), env=env).stdout == text
                results[str(size)] = row
                print(f"{total} jobs (filled in {filled:.1f} s):", file=sys.stderr)
                for name in commands:
                    s = row[name]
                    same = {True: "   same output", False: "   OUTPUT DIFFERS"}.get(s.get("same_as_reference"), "")
                    print(f"  {name:<15} median {s['median']:7.1f} ms   p95 {s['p95']:7.1f} ms   "
                          f"p99 {s['p99']:7.1f} ms{same}", file=sys.stderr)
    print(json.dumps({"bench": "squeue", "python": sys.version.split()[0], "machine": platform.machine(),
                      "cores": os.cpu_count(), "target_p99_ms": 200, "results": results}))


if __name__ == "__main__":
    main()
