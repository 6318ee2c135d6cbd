"""One student of bench/class_session.py: a session typed at a login node, timed command by command.

Runs as the student, with nothing but Python's standard library (it is sent to the login
containers of the docker clusters on stdin: ``python3 - CONFIG``).  CONFIG is JSON: ``user``,
``seed`` (the same seed types the same session on every cluster), ``seconds``, ``tag`` (this
run's job names start with it) and ``start`` (sacct's -S, as YYYY-MM-DDTHH:MM:SS).

What a student of a Slurm class types, each at its own pace (seconds between, drawn from the
seed): ``squeue -u USER`` every 2-5 s, ``sacct -X`` every 8-15 s, a small GPU job every 10-25 s
(one in four an array of three), a long one now and then that they ``scancel`` a little later,
``srun -N1 true`` every 40-80 s and ``salloc -N1 srun true`` every 60-120 s.  Every job is named
``TAG-USER-N`` (arrays: each of its tasks has the name), so the end can count them: when the time
is up, it waits for its jobs to leave the queue and asks sacct for them.

Prints one JSON line per command (``cmd``, ``t``: seconds since the start, ``ms``, ``rc``, ``err``:
the start of its stderr when it failed) and a last line with what it submitted, what it
cancelled and what sacct knows (``jobs``).
"""

import json
import os
import random
import subprocess
import sys
import time


def main(config: dict) -> None:
    user, tag = config["user"], config["tag"]
    rng = random.Random(f"{config['seed']}-{user}")
    start = time.perf_counter()
    deadline = start + config["seconds"]
    every = {"squeue": (2, 5), "sacct": (8, 15), "sbatch": (10, 25), "long": (45, 90), "srun": (40, 80),
             "salloc": (60, 120)}
    due = {what: rng.uniform(0, high) for what, (low, high) in every.items()}
    submitted: dict[str, int] = {}  # job name -> the records it makes (an array: one per task)
    cancelled: list[str] = []
    to_cancel: list[tuple[float, str]] = []  # (when, job id)
    count = 0

    def run(cmd: str, argv: list[str]) -> subprocess.CompletedProcess:
        t0 = time.perf_counter()
        r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        took = time.perf_counter() - t0
        line = {"cmd": cmd, "t": round(t0 - start, 2), "ms": round(took * 1000, 1), "rc": r.returncode}
        if r.returncode:
            line["err"] = r.stderr[:300]
        print(json.dumps(line), flush=True)
        return r

    while True:
        now = time.perf_counter() - start
        if now >= config["seconds"]:
            break
        for when, job in [c for c in to_cancel if c[0] <= now]:
            to_cancel.remove((when, job))
            run("scancel", ["scancel", job])
        what = min(due, key=due.get)
        wait = due[what] - now
        if to_cancel:
            wait = min(wait, to_cancel[0][0] - now)
        if wait > 0:
            time.sleep(min(wait, deadline - time.perf_counter()) if deadline > time.perf_counter() else 0)
            continue
        low, high = every[what]
        due[what] = now + rng.uniform(low, high)
        if what == "squeue":
            run("squeue", ["squeue", "-u", user])
        elif what == "sacct":
            run("sacct", ["sacct", "-X", "-S", config["start"], "-o", "JobID,JobName%30,State,Elapsed"])
        elif what in ("sbatch", "long"):
            count += 1
            name = f"{tag}-{user}-{count}"
            array = what == "sbatch" and rng.random() < 0.25
            seconds = rng.randint(5, 20) if what == "sbatch" else 600
            argv = ["sbatch", "--parsable", "--gres=gpu:1", "-t", "15", "-J", name, "-o", "/dev/null",
                    *(["--array=0-2"] if array else []), "--wrap", f"sleep {seconds}"]
            r = run("sbatch", argv)
            if r.returncode == 0:
                submitted[name] = 3 if array else 1
                if what == "long":
                    to_cancel.append((now + rng.uniform(5, 20), r.stdout.strip().split(";")[0]))
                    to_cancel.sort()
                    cancelled.append(name)
        elif what == "srun":
            run("srun", ["srun", "-N1", "-t", "1", "true"])
        elif what == "salloc":
            run("salloc", ["salloc", "-N1", "-t", "1", "srun", "true"])
    for _, job in to_cancel:
        run("scancel", ["scancel", job])
    jobs = finish(user, tag, config, submitted)
    print(json.dumps({"user": user, "submitted": submitted, "cancelled": cancelled, "jobs": jobs}), flush=True)


def finish(user: str, tag: str, config: dict, submitted: dict) -> dict:
    """Once this student's jobs have left the queue (at most 5 minutes): how many records sacct
    has of each of this run's job names."""
    deadline = time.perf_counter() + 300
    while time.perf_counter() < deadline:
        r = subprocess.run(["squeue", "-h", "-u", user, "-o", "%j"], capture_output=True, text=True)
        if r.returncode == 0 and not any(line.startswith(f"{tag}-") for line in r.stdout.split()):
            break
        time.sleep(2)
    r = subprocess.run(["sacct", "-X", "-n", "-P", "-S", config["start"], "-o", "JobName,State"],
                       capture_output=True, text=True)
    jobs: dict[str, list[str]] = {}
    for line in r.stdout.splitlines():
        name, _, state = line.partition("|")
        if name.startswith(f"{tag}-"):
            jobs.setdefault(name, []).append(state)
    return jobs


if __name__ == "__main__":
    os.environ.setdefault("LANG", "C.UTF-8")
    main(json.loads(sys.argv[1]))
