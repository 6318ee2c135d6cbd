"""The live part of ``minislurm demo``: data-parallel training survives a node crash.

On a cluster of 2 nodes x 4 GPUs (local processes, or with ``--docker`` containers): an
uninterrupted run of ``examples/ddp`` for reference, then the same job again; halfway through,
one node crashes (its agent and every process on it are killed; on containers, ``docker kill``
of the node).  The controller marks the node DOWN after SlurmdTimeout, requeues the job with
the same id, the node comes back, the job resumes from its last checkpoint, and its final
weights are compared bit for bit with the reference.  Everything shown is real, and every
claim the story makes is checked against the cluster's own records (:func:`check_story`): a
story that went otherwise says what did not hold and keeps the cluster's folder with its logs.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from minislurm.cluster import Cluster, make_cluster, wait_for
from minislurm.core.hostlist import expand

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp"
STEPS, CKPT_EVERY = 100, 20  # train.sbatch checkpoints every 20 steps
TRAIN_ARGS = ("--steps", str(STEPS), "--step-time", "0.05")
CRASH_AFTER = 40  # the node crashes once the log shows this checkpoint


@dataclass
class Claim:
    said: str  # what the demo tells the reader
    holds: bool
    seen: str = ""  # what the records showed instead, when it does not hold


@dataclass
class Told:
    """What the cluster recorded of the story, for :func:`check_story`."""
    job_id: int
    victim: str
    reference_state: str
    runs: list[dict[str, str]]  # sacct -D -X -P: JobID, State, NodeList, one per run
    restart_count: int
    final_state: str
    log: str  # the job's output, both runs (--open-mode=append)
    last_checkpoint_before_crash: int  # the last checkpoint the log reported before the kill
    same_weights: bool
    numbers: int  # how many numbers the weights hold


def resumed_at(log: str, restart: int) -> int | None:
    """The step run ``restart`` of the job says it resumed at, if it says so."""
    for line in log.splitlines():
        if f" restart {restart}: resuming at step " in line:
            return int(line.split("resuming at step ", 1)[1].split()[0])
    return None


def last_checkpoint(log: str, restart: int = 0) -> int:
    """The last step at which run ``restart`` reported a checkpoint written."""
    steps = [int(line.split("| step ", 1)[1].split(":")[0]) for line in log.splitlines()
             if line.startswith(f"restart {restart} | step ") and "checkpoint written" in line]
    return max(steps, default=0)


def check_story(t: Told) -> list[Claim]:
    """Each claim the demo prints, against what the cluster recorded."""
    states = [r.get("State", "?") for r in t.runs]
    ids = {r.get("JobID") for r in t.runs}
    first_nodes = expand(t.runs[0].get("NodeList")) if t.runs else []
    shown = ", ".join(f"{r.get('State')} on {r.get('NodeList')}" for r in t.runs) or "none"
    at = resumed_at(t.log, 1)
    crashed = t.last_checkpoint_before_crash
    # A checkpoint is complete a moment before its line is printed: the crash may fall between.
    from_last = at is not None and at >= CRASH_AFTER and at in (crashed, crashed + CKPT_EVERY)
    return [
        Claim("the uninterrupted reference run COMPLETED", t.reference_state == "COMPLETED",
              f"it ended {t.reference_state}"),
        Claim(f"sacct -D shows job {t.job_id} run twice: NODE_FAIL (on {t.victim}), then COMPLETED",
              states == ["NODE_FAIL", "COMPLETED"] and t.victim in first_nodes,
              f"runs: {shown}"),
        Claim(f"the job kept its id ({t.job_id}) and was requeued once (SLURM_RESTART_COUNT=1)",
              ids == {str(t.job_id)} and t.restart_count == 1,
              f"ids {sorted(map(str, ids))}, restart count {t.restart_count}"),
        Claim(f"restart 1 resumed at step {at}, the last checkpoint before the crash",
              from_last and resumed_at(t.log, 2) is None,
              f"resumed at step {at}; the log's last checkpoint before the crash was step {crashed}"),
        Claim(f"the job ended COMPLETED with {STEPS} steps", t.final_state == "COMPLETED"
              and f"done: {STEPS} steps" in t.log, f"it ended {t.final_state}"),
        Claim(f"its final weights are bitwise identical to the uninterrupted run's ({t.numbers} numbers)",
              t.same_weights, "the weights differ"),
    ]

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
        return wait_for(test, timeout, "the demo's next step")

    def submit(self, final: str, shape: tuple[str, ...] = ()) -> int:
        """``shape``: sbatch options that override the script's 2 nodes x 4 GPUs."""
        return int(self.show("sbatch", *shape, "train.sbatch", *TRAIN_ARGS, "--final", final).split()[-1])

    def records(self, job_id: int) -> list[dict[str, str]]:
        """``sacct -D -X`` of the job, one dict a run (its id, state and nodes)."""
        r = self.c.run("sacct", "-D", "-X", "-P", "-j", str(job_id), "-o", "JobID,State,NodeList", cwd=str(self.work))
        header, *lines = [line for line in r.stdout.splitlines() if line] or [""]
        return [dict(zip(header.split("|"), line.split("|"))) for line in lines]

    def log(self, job_id: int) -> str:
        path = self.work / f"ddp-{job_id}.out"
        return path.read_text() if path.exists() else ""


def story(kind: str | None = None, nodes: int = 2, gpus_per_node: int = 4,
          folder: Path = Path("out/demo/story")) -> bool:
    """The story on a cluster of ``kind`` (``local`` or ``docker``; default ``$MINISLURM_CLUSTER``),
    kept in ``folder`` (emptied first); True if every claim held."""
    import torch

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cluster = make_cluster(nodes, gpus_per_node, kind=kind, dir=folder / "cluster")
    flag = " --docker" if cluster.kind == "docker" else ""
    print(f"$ minislurm cluster up{flag} --nodes {nodes} --gpus-per-node {gpus_per_node}", flush=True)
    claims: list[Claim] = []
    with cluster as c:
        try:
            claims = _tell(c, nodes, gpus_per_node, torch)
        except TimeoutError as exc:
            claims = [Claim("the story reached its next step in time", False, str(exc))]
        held = all(claim.holds for claim in claims)
        if not held:
            c.save_logs(folder / "logs")
        print(f"$ minislurm cluster down{flag}", flush=True)
    gone = "containers, network and volumes removed" if cluster.kind == "docker" else \
        "controller and agents stopped; no process left behind"
    print(f"{gone}\n")
    print("# Checked against the cluster's own records:")
    for claim in claims:
        print(f"#   {'ok    ' if claim.holds else 'FAILED'} {claim.said}"
              + ("" if claim.holds else f"\n#          seen: {claim.seen}"))
    if held:
        print()
        return True
    print(f"\nminislurm demo: the story did not go as told.  The cluster's slurm.conf, logs and the "
          f"job's files are kept in {folder} (logs in {folder / 'logs'}).\n", flush=True)
    return False


def _tell(c: Cluster, nodes: int, gpus_per_node: int, torch) -> list[Claim]:
    print(f"# {c.describe()}\n", flush=True)
    work = c.workdir("ddp-demo")
    c.put(EXAMPLE, work)
    s = Story(c, work)
    timeout = int(c.config.slurmd_timeout)
    victim = c.node_names[-1]
    s.show("sinfo")
    print(f"$ cat train.sbatch\n{(work / 'train.sbatch').read_text()}")
    ranks = f"{nodes * gpus_per_node} ranks ({nodes} nodes x {gpus_per_node} GPUs)"
    print(f"# 1. An uninterrupted run, for reference: {ranks}, {STEPS} steps.\n")
    shape = () if (nodes, gpus_per_node) == (2, 4) else \
        (f"--nodes={nodes}", f"--ntasks-per-node={gpus_per_node}", f"--gres=gpu:{gpus_per_node}")
    ref = s.submit("reference.pt", shape)
    s.until(lambda: s.job(ref)["state"] not in ("PENDING", "RUNNING"))
    reference_state = s.job(ref)["state"]
    print(s.log(ref))

    print(f"# 2. The same job again.  At step {CRASH_AFTER} (a checkpoint), node {victim} crashes.\n")
    job = s.submit("resumed.pt", shape)
    s.until(lambda: f"step {CRASH_AFTER}:" in s.log(job))
    s.show("squeue")
    crash = time.time()
    c.kill_node(victim)
    crashed_at = last_checkpoint(s.log(job))
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
    s.until(lambda: s.job(job)["state"] == "RUNNING" and s.job(job)["restart_count"] >= 1)
    rerun = time.time()
    s.until(lambda: "restart 1 | step" in s.log(job) or s.job(job)["state"] not in ("PENDING", "RUNNING"))
    progress = time.time()
    s.until(lambda: s.job(job)["state"] not in ("PENDING", "RUNNING"))
    print(f"$ cat ddp-{job}.out   # both runs, one log (--open-mode=append)\n"
          + "\n".join(line for line in s.log(job).splitlines() if not line.startswith("[rank")) + "\n")
    s.show("sacct", "-D", "-j", str(job))
    runs = s.records(job)
    same, numbers = _same_weights(torch, work / "reference.pt", work / "resumed.pt")
    print(f"# Final weights, resumed run vs uninterrupted run: "
          f"{'bitwise identical' if same else 'DIFFERENT'} ({numbers} numbers)")
    print(f"# Timeline: crash -> DOWN {down - crash:.1f} s, -> running again {rerun - crash:.1f} s "
          f"(after the node's return), -> past the checkpoint {progress - crash:.1f} s\n")
    final = s.job(job)
    return check_story(Told(job, victim, reference_state, runs, final["restart_count"], final["state"],
                            s.log(job), crashed_at, same, numbers))


def _same_weights(torch, a_path: Path, b_path: Path) -> tuple[bool, int]:
    """Whether two weight files hold the same tensors bit for bit, and how many numbers."""
    if not (a_path.exists() and b_path.exists()):
        return False, 0
    a = torch.load(a_path, weights_only=True)
    b = torch.load(b_path, weights_only=True)
    same = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    return same, sum(v.numel() for v in a.values())
