"""Which task gets which rank, node and GPUs under ``srun``: predicted without a cluster, or measured.

:func:`predict` follows a stand-alone ``srun`` (no allocation yet) through minislurm's own
pieces: the option parser, the submission checks (:func:`minislurm.sched.submit.build_jobs`),
one scheduling pass for the nodes and GPU indices, the block task layout
(:mod:`minislurm.core.layout`, with the step rules of :mod:`minislurm.core.stepfit`), the task
environment the node agents build (:mod:`minislurm.slurmd.env`), and the Slurm -> torch
mapping (:mod:`minislurm.train.distenv`).  :func:`run_live` runs the same ``srun`` on a live
cluster, where every task reports what it really sees (:mod:`minislurm.lab.srun_probe`), so the
two can be compared row by row.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

from minislurm.cluster.confgen import lab_config
from minislurm.core.errors import SlurmError
from minislurm.core.layout import compress_counts, task_gpus
from minislurm.core.options import parse_options
from minislurm.core.optvalues import OptionError
from minislurm.core.state import ClusterState
from minislurm.core.stepfit import StepLayoutError, StepRequest, step_layout
from minislurm.lab.srun_probe import probe
from minislurm.sched import priority
from minislurm.sched.apply import apply
from minislurm.sched.schedule import schedule
from minislurm.sched.submit import build_jobs
from minislurm.slurmd.env import step_env, task_env


@dataclass(frozen=True)
class TaskRow:
    """One task: what Slurm told it, and what torch.distributed would read."""

    node: str
    procid: int
    localid: int
    nodeid: int
    visible: tuple[int, ...]  # CUDA_VISIBLE_DEVICES
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    master_addr: str
    master_port: int

    @property
    def device(self) -> int | None:
        """The GPU that ``cuda:LOCAL_RANK`` opens: the LOCAL_RANK-th visible one (None: no such GPU)."""
        return self.visible[self.local_rank] if self.local_rank < len(self.visible) else None

    def same_as(self, other: "TaskRow") -> bool:
        """Equal in everything but the port (which follows the job id)."""
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.name != "master_port")


def row_from_probe(data: dict) -> TaskRow:
    env, t = data["env"], data["torch"]
    cvd = env.get("CUDA_VISIBLE_DEVICES", "")
    return TaskRow(node=env["SLURMD_NODENAME"], procid=int(env["SLURM_PROCID"]), localid=int(env["SLURM_LOCALID"]),
                   nodeid=int(env["SLURM_NODEID"]), visible=tuple(int(g) for g in cvd.split(",") if g),
                   rank=t["RANK"], local_rank=t["LOCAL_RANK"], world_size=t["WORLD_SIZE"],
                   local_world_size=t["LOCAL_WORLD_SIZE"], master_addr=t["MASTER_ADDR"],
                   master_port=t["MASTER_PORT"])


@dataclass
class SrunLayout:
    argv: list[str]
    job_id: int
    nodes: list[str]
    gpus: dict[str, list[int]]  # the step's GPUs on each node
    tasks: list[TaskRow]  # by global rank

    @property
    def tasks_per_node(self) -> str:
        return compress_counts([sum(t.node == n for t in self.tasks) for n in self.nodes])

    def problems(self) -> list[str]:
        """The classic mistakes, in words: ranks without a GPU, GPUs no rank uses, shared GPUs."""
        out: list[str] = []
        if not any(self.gpus.values()):
            return ["no GPUs allocated (no --gres=gpu:N): CUDA_VISIBLE_DEVICES is not set, so "
                    "training would run on the CPU"]
        for node in self.nodes:
            mine = [t for t in self.tasks if t.node == node]
            orphans = [t.rank for t in mine if t.device is None]
            if orphans:
                out.append(f"{node}: rank(s) {_ids(orphans)} have no GPU: LOCAL_RANK is past the "
                           f"{len(mine[0].visible)} visible device(s), so cuda:LOCAL_RANK fails")
            used: dict[int, list[int]] = {}
            for t in mine:
                if t.device is not None:
                    used.setdefault(t.device, []).append(t.rank)
            idle = [g for g in self.gpus.get(node, []) if g not in used]
            if idle:
                out.append(f"{node}: GPU(s) {_ids(idle)} allocated but used by no rank")
            for g, ranks in sorted(used.items()):
                if len(ranks) > 1:
                    out.append(f"{node}: ranks {_ids(ranks)} share GPU {g}")
        return out


def format_layout(layout: SrunLayout) -> str:
    """The layout as a text table, one line per task (what the lessons print)."""
    head = (f"{'node':7}{'NODEID':>7}{'PROCID':>7}{'LOCALID':>8}  {'CUDA_VISIBLE_DEVICES':21}"
            f"{'RANK':>5}{'LOCAL_RANK':>11}{'WORLD_SIZE':>11}  cuda:LOCAL_RANK")
    lines = [head]
    for t in layout.tasks:
        gpu = "-" if not t.visible else f"GPU {t.device}" if t.device is not None else "none!"
        cvd = ",".join(map(str, t.visible)) or "(unset)"
        lines.append(f"{t.node:7}{t.nodeid:>7}{t.procid:>7}{t.localid:>8}  {cvd:21}"
                     f"{t.rank:>5}{t.local_rank:>11}{t.world_size:>11}  {gpu}")
    return "\n".join(lines)


def _ids(xs: list[int]) -> str:
    return ",".join(map(str, xs))


def srun_args(nodes: int | None = None, ntasks: int | None = None, ntasks_per_node: int | None = None,
              gpus: int | None = None, gpus_per_task: int | None = None) -> list[str]:
    """Command-line words for the chosen options (``None`` or 0: option not given)."""
    out: list[str] = []
    if nodes:
        out.append(f"--nodes={nodes}")
    if ntasks:
        out.append(f"--ntasks={ntasks}")
    if ntasks_per_node:
        out.append(f"--ntasks-per-node={ntasks_per_node}")
    if gpus:
        out.append(f"--gres=gpu:{gpus}")
    if gpus_per_task:
        out.append(f"--gpus-per-task={gpus_per_task}")
    return out


def predict(args: list[str], *, nodes: int = 2, gpus_per_node: int = 4, cpus_per_node: int = 32,
            job_id: int = 1) -> SrunLayout:
    """The layout a stand-alone ``srun ARGS`` gets on an idle lab cluster (``LocalCluster``'s shape).

    Raises ValueError with srun's message when srun would fail or wait.
    """
    try:
        spec, rest = parse_options(list(args), prog="srun", now=0.0)
    except OptionError as err:
        raise ValueError(err.text.strip()) from None
    state = ClusterState(lab_config(nodes, gpus_per_node, cpus_per_node))
    try:
        (job,) = build_jobs(spec, state, first_id=job_id, user="user", now=0.0, default_name="python")
    except SlurmError as err:
        raise ValueError(f"srun: error: Unable to allocate resources: {err.message}") from None
    job.priority = priority.initial(job, state, 0.0)
    state.add(job)
    if not apply(state, schedule(state, 0.0)).started:
        raise ValueError(f"srun: job {job.job_id} queued and waiting for resources "
                         f"(reason: {job.reason}); it can never start on this cluster")
    alloc = job.alloc
    names = [state.nodes.names[n] for n in alloc.nodes]
    # The step of a stand-alone srun: what srun asks for (cli/srun.py), laid out as the
    # controller lays it out (ctld/steps.create).
    try:
        layout = step_layout(names, alloc.cpus, dict(zip(names, alloc.gpus)),
                             StepRequest.from_options(spec, spec, inside=False), job_ntasks=job.ntasks)
    except StepLayoutError as err:
        raise ValueError(f"srun: error: Unable to create step for job {job.job_id}: {err}") from None
    step_nodes = layout.nodes
    step = {"step_id": 0, "nodes": step_nodes, "tasks_per_node": layout.tasks_per_node,
            "task_ids": layout.task_ids, "ntasks": layout.ntasks, "step_gpus": layout.gpus,
            "node_cpus": layout.cpus}
    info = {"job_id": job.job_id, "name": job.name, "nodes": names, "partition": job.partition,
            "account": job.account, "cpus_per_node": list(alloc.cpus), "cluster": "minislurm",
            "submit_dir": "/", "submit_host": "login", "user": "user", "uid": 1000, "gid": 1000,
            "start_time": 0, "cpus_per_task": spec.cpus_per_task, "ntasks_per_node": spec.ntasks_per_node}
    per_task = spec.gpus_per_task[1] if spec.gpus_per_task else None
    rows = []
    for i, node in enumerate(step_nodes):
        base = step_env(info, step, node, {})
        for local, task in enumerate(step["task_ids"][i]):
            bound = task_gpus(layout.gpus[node], local, per_task)
            rows.append(row_from_probe(probe(task_env(base, procid=task, localid=local, gpus=bound))))
    return SrunLayout(list(args), job.job_id, step_nodes, step["step_gpus"], sorted(rows, key=lambda r: r.procid))


def run_live(cluster, args: list[str], *, cwd: str | None = None, timeout: float = 60.0) -> SrunLayout:
    """Run ``srun ARGS python -m minislurm.lab.srun_probe`` on ``cluster`` (local or docker)."""
    try:
        r = cluster.run("srun", *args, cluster.python, "-m", "minislurm.lab.srun_probe", cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ValueError(f"srun did not finish in {timeout:g} s (is the job waiting for resources?)") from None
    if r.returncode != 0:
        raise ValueError((r.stderr.strip() or f"srun exited with {r.returncode}").splitlines()[-1])
    data = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    rows = sorted((row_from_probe(d) for d in data), key=lambda t: t.procid)
    nodes = list(dict.fromkeys(t.node for t in sorted(rows, key=lambda t: t.nodeid)))
    gpus: dict[str, set[int]] = {}
    for d in data:  # a task bound with --gpus-per-task is told only its own
        step_gpus = d["env"].get("SLURM_STEP_GPUS", "")
        gpus.setdefault(d["env"]["SLURMD_NODENAME"], set()).update(int(g) for g in step_gpus.split(",") if g)
    job_id = int(data[0]["env"]["SLURM_JOB_ID"]) if data else 0
    return SrunLayout(list(args), job_id, nodes, {n: sorted(gpus.get(n, ())) for n in nodes}, rows)


@contextmanager
def temporary_cluster(nodes: int = 2, gpus_per_node: int = 4, **settings):
    """A cluster (``$MINISLURM_CLUSTER``: local or docker) in a temporary directory, stopped and
    removed on exit."""
    from minislurm.cluster import make_cluster

    with tempfile.TemporaryDirectory(prefix="minislurm-") as tmp:
        with make_cluster(nodes, gpus_per_node, dir=Path(tmp) / "cluster", **settings) as c:
            yield c
