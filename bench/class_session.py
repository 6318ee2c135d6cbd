"""A class of 30 at once (issue 27 item 1): the same sessions typed against minislurm's local
cluster, its 4 x 8 docker cluster and the real-Slurm twin, one after the other in one run.

Each student is a real Unix account (``cls01`` .. ``cls30``, made for the run and removed after)
and a process of its own (bench/class_user.py) that types, as that user, on a login node, what
a student of a Slurm class types: squeue every few seconds, sacct, small GPU jobs and arrays,
a job they cancel, ``srun -N1 true``, ``salloc -N1 srun true``; every command timed whole, as
the student waits for it.  The seed makes every cluster get the same sessions.

* ``local``: ``LocalCluster(nodes=4, gpus_per_node=8)`` on this machine; the students' commands
  run with the system's python3 (the project's Python lives in root's home, which no student
  may enter), their tokens in ``tokens/<user>`` beside slurm.conf, as ``cluster add-users`` does;
* ``docker``: ``minislurm cluster up --docker`` (4 x 8, the image as built; ``--build`` builds
  it from this tree first), the students added with ``cluster add-users``, their sessions on
  the login container;
* ``twin``: docker/slurm, Slurm 22.05 (2 nodes x 8 CPUs x 4 GPUs: the jobs queue more there),
  which must be running; the students are added to each of its containers, their sessions run
  on its login container.

Reported per cluster and command: count, p50 and p99 of the wall times, errors (a command that
exited non-zero; ``scancel`` of a job that had already ended is not one), and per job name
submitted: lost (no record in sacct once the queue is empty) or duplicated (more records than
the job has tasks); then minislurm's figures over real Slurm's.

    python bench/class_session.py [--minutes 10] [--users 30] [--targets local,docker,twin] [--build]

Prints a table on stderr and one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DRIVER = (HERE / "class_user.py").read_text()
COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "srun", "salloc")
FIRST_UID = 2101  # the students' uids on the twin (its own accounts end at 1000)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Local:
    name = "local (minislurm, 4 x 8, this machine)"

    def __init__(self, students: list[str]):
        self.students = students
        self.made: list[str] = []

    def __enter__(self) -> "Local":
        from minislurm.cluster import LocalCluster
        from minislurm.cluster.system import compile_commands, shim_text
        for user in self.students:
            try:
                pwd.getpwnam(user)
            except KeyError:
                subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", user], check=True)
                self.made.append(user)
        self.tmp = Path(tempfile.mkdtemp(prefix="class-"))
        self.tmp.chmod(0o755)  # the students reach slurm.conf, their tokens and the spooled scripts
        self.cluster = LocalCluster(nodes=4, gpus_per_node=8, dir=self.tmp / "cluster").up(timeout=120)
        self.bin = self.tmp / "bin"
        self.bin.mkdir()
        for command in (*COMMANDS, "sinfo"):
            shim = self.bin / command
            shim.write_text(shim_text(command, self.cluster.conf_path, "/usr/bin/python3"))
            shim.chmod(0o755)
        compile_commands("/usr/bin/python3")  # as cluster up --system does (they cannot write here)
        root = self.cluster.client()
        for user in self.students:
            pw = pwd.getpwnam(user)
            token = self.cluster.dir / "tokens" / user
            token.write_text(root.call("POST", "/token", {"username": user, "lifespan": 86400})["token"] + "\n")
            os.chown(token, pw.pw_uid, pw.pw_gid)
            token.chmod(0o600)
            home = self.tmp / "home" / user
            home.mkdir(parents=True)
            os.chown(home, pw.pw_uid, pw.pw_gid)
        return self

    def session(self, user: str, config: dict) -> subprocess.Popen:
        pw = pwd.getpwnam(user)
        home = self.tmp / "home" / user
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SLURM_CONF": str(self.cluster.conf_path),
               "HOME": str(home), "USER": user, "LOGNAME": user, "LANG": "C.UTF-8"}
        return subprocess.Popen(["/usr/bin/python3", "-c", DRIVER, json.dumps(config)], user=pw.pw_uid,
                                group=pw.pw_gid, extra_groups=[], env=env, cwd=home, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def __exit__(self, *exc) -> None:
        self.cluster.down()
        shutil.rmtree(self.tmp, ignore_errors=True)
        for user in self.made:
            subprocess.run(["userdel", user], check=False)


class Docker:
    name = "docker (minislurm, 4 x 8 containers)"

    def __init__(self, students: list[str], build: bool):
        self.students, self.build = students, build

    def __enter__(self) -> "Docker":
        from minislurm.cluster import DockerCluster
        from minislurm.cluster.engine import BUILD_SCRIPT
        if self.build:
            subprocess.run(["bash", str(BUILD_SCRIPT)], check=True, stdout=subprocess.DEVNULL)
        self.tmp = Path(tempfile.mkdtemp(prefix="class-docker-"))
        self.cluster = DockerCluster(nodes=4, gpus_per_node=8, dir=self.tmp / "docker")
        self.cluster.up(timeout=180)
        _, errors = self.cluster.add_users(*self.students)
        if errors:
            raise RuntimeError(f"add-users: {errors}")
        return self

    def session(self, user: str, config: dict) -> subprocess.Popen:
        argv = self.cluster.exec_argv("python3", "-", json.dumps(config), user=user)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdin.write(DRIVER)
        proc.stdin.close()
        return proc

    def __exit__(self, *exc) -> None:
        self.cluster.down()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Twin:
    name = "twin (Slurm 22.05, 2 x 4 GPUs)"
    containers = ("slurmctld", "c1", "c2", "login")

    def __init__(self, students: list[str]):
        self.students = students

    def _exec(self, container: str, script: str) -> None:
        subprocess.run(["docker", "exec", f"minislurm-{container}", "sh", "-c", script], check=True,
                       stdout=subprocess.DEVNULL)

    def __enter__(self) -> "Twin":
        r = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", "minislurm-login"], capture_output=True,
                           text=True)
        if r.stdout.strip() != "true":
            raise RuntimeError("the twin is not running: make real-slurm (docker/slurm/cluster.sh up)")
        adds = "; ".join(f"id -u {u} >/dev/null 2>&1 || useradd -M -u {FIRST_UID + i} -U -s /bin/bash {u}"
                         for i, u in enumerate(self.students))
        for container in self.containers:
            self._exec(container, adds)
        self._exec("login", "; ".join(f"mkdir -p /shared/work/{u} && chown {u}: /shared/work/{u}" for u in self.students))
        return self

    def session(self, user: str, config: dict) -> subprocess.Popen:
        uid = FIRST_UID + self.students.index(user)
        home = f"/shared/work/{user}"
        argv = ["docker", "exec", "-i", "-u", f"{uid}:{uid}", "-e", f"HOME={home}", "-e", f"USER={user}",
                "-e", f"LOGNAME={user}", "-w", home, "minislurm-login", "python3", "-", json.dumps(config)]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdin.write(DRIVER)
        proc.stdin.close()
        return proc

    def __exit__(self, *exc) -> None:
        # The twin queues more than it runs in ten minutes: its students' jobs go with them, or
        # the next user of the twin (tests/docker/test_real_slurm.py) waits for busy nodes.
        self._exec("slurmctld", "; ".join(f"scancel -u {u} 2>/dev/null || true" for u in self.students))
        self._exec("login", "; ".join(f"rm -rf /shared/work/{u}" for u in self.students))
        for container in self.containers:
            self._exec(container, "; ".join(f"userdel {u} 2>/dev/null || true" for u in self.students))


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def run_class(target, students: list[str], seconds: int, seed: int) -> dict:
    """Every student's session at once; their lines, gathered."""
    tag = f"c{int(time.time()) % 100000}"
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 60))
    procs = {u: target.session(u, {"user": u, "seed": seed, "seconds": seconds, "tag": tag, "start": start})
             for u in students}
    lines: dict[str, list[dict]] = {u: [] for u in students}
    errors: dict[str, str] = {}

    def read(user: str) -> None:
        for line in procs[user].stdout:
            try:
                lines[user].append(json.loads(line))
            except ValueError:
                pass
        errors[user] = procs[user].stderr.read()

    readers = [threading.Thread(target=read, args=(u,)) for u in students]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    for proc in procs.values():
        proc.wait()
    if os.environ.get("CLASS_LINES"):  # every command's line, for a look at the run over time
        with open(os.environ["CLASS_LINES"], "a") as out:
            out.writelines(json.dumps({"user": u, **i}) + "\n" for u, items in lines.items() for i in items if "cmd" in i)
    return summarise(lines, errors)


def summarise(lines: dict[str, list[dict]], stderr: dict[str, str]) -> dict:
    by_cmd: dict[str, list[dict]] = {}
    lost, duplicated, unfinished, broken = [], [], [], []
    for user, items in lines.items():
        end = next((i for i in items if "submitted" in i), None)
        if end is None:
            broken.append(f"{user}: {stderr.get(user, '')[-300:]}")
            continue
        for item in items:
            if "cmd" in item:
                by_cmd.setdefault(item["cmd"], []).append(item)
        for name, tasks in end["submitted"].items():
            found = end["jobs"].get(name, [])
            if len(found) < tasks:
                lost.append(name)
            elif len(found) > tasks:
                duplicated.append(name)
            if any(s in ("PENDING", "RUNNING") for s in found):
                unfinished.append(name)
    out: dict = {"commands": {}, "jobs_submitted": sum(len(next(i for i in items if "submitted" in i)["submitted"])
                                                      for items in lines.values() if any("submitted" in i for i in items)),
                 "lost": lost, "duplicated": duplicated, "unfinished": unfinished, "broken_sessions": broken}
    for cmd, items in sorted(by_cmd.items()):
        walls = [i["ms"] for i in items]
        failed = [i for i in items if i["rc"] and not (cmd == "scancel" and _already_ended(i.get("err", "")))]
        out["commands"][cmd] = {"count": len(items), "p50_ms": round(percentile(walls, 0.5), 1),
                                "p99_ms": round(percentile(walls, 0.99), 1), "errors": len(failed),
                                "error_examples": sorted({i.get("err", "")[:120] for i in failed})[:3]}
    return out


def _already_ended(err: str) -> bool:
    """scancel of a job that ended first: a race of the session, not a failure of the cluster."""
    return "already completing or completed" in err or "Invalid job id" in err


def table(results: dict) -> None:
    names = list(results)
    say(f"\n{'command':10}" + "".join(f"{n[:30]:>32}" for n in names))
    for cmd in COMMANDS:
        cells = []
        for n in names:
            c = results[n]["commands"].get(cmd)
            cells.append(f"{c['count']:>5} {c['p50_ms']:>7.0f} /{c['p99_ms']:>7.0f} ms e{c['errors']}" if c else "-")
        say(f"{cmd:10}" + "".join(f"{cell:>32}" for cell in cells))
    for key in ("jobs_submitted", "lost", "duplicated", "unfinished", "broken_sessions"):
        say(f"{key:10}" + "".join(f"{str(len(results[n][key]) if isinstance(results[n][key], list) else results[n][key]):>32}"
                                  for n in names))


def ratios(results: dict) -> dict:
    """Each minislurm cluster's p50 and p99 over the twin's, per command (below 1: faster)."""
    twin = next((r for n, r in results.items() if n.startswith("twin")), None)
    if twin is None:
        return {}
    out = {}
    for n, r in results.items():
        if n.startswith("twin"):
            continue
        out[n] = {cmd: {q: round(c[q] / twin["commands"][cmd][q], 1) if twin["commands"].get(cmd, {}).get(q) else None
                        for q in ("p50_ms", "p99_ms")}
                  for cmd, c in r["commands"].items() if cmd in twin["commands"]}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--users", type=int, default=30)
    p.add_argument("--targets", default="local,docker,twin")
    p.add_argument("--seed", type=int, default=27)
    p.add_argument("--build", action="store_true", help="build the docker cluster's image from this tree first")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("class_session.py makes Unix accounts and starts clusters: run it as root")
    sys.path.insert(0, str(ROOT))
    students = [f"cls{i:02d}" for i in range(1, args.users + 1)]
    seconds = int(args.minutes * 60)
    results: dict = {}
    out: dict = {"bench": "class_session", "users": args.users, "minutes": args.minutes, "seed": args.seed,
                 "cores": os.cpu_count()}
    for kind in args.targets.split(","):
        target = {"local": lambda: Local(students), "docker": lambda: Docker(students, args.build),
                  "twin": lambda: Twin(students)}[kind]()
        say(f"-- {target.name}: {args.users} students for {args.minutes} min (load {os.getloadavg()[0]:.1f})")
        with target:
            load_before = os.getloadavg()[0]
            result = run_class(target, students, seconds, args.seed)
            result["load"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
        results[target.name] = result
        say(json.dumps({k: v for k, v in result.items() if k != "commands"})[:600])
    table(results)
    out["results"], out["ratio_to_real_slurm"] = results, ratios(results)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
