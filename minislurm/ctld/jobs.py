"""Saving jobs: a Job (and what only the live cluster needs to know about it) to a dict and back.

``Live`` holds what the scheduler never reads but the agents and commands do: the script,
the environment to start it with, where its output goes, how to signal it, and which step
number comes next.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from minislurm.core.deps import Dependency
from minislurm.core.job import Allocation, Job, Shape
from minislurm.core.spec import spec_from_dict, spec_to_dict
from minislurm.core.state import ClusterState
from minislurm.core.states import DependencyOutcome, JobState
from minislurm.sched.depend import item_outcome


@dataclass
class Live:
    batch: bool = True
    script: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    work_dir: str = "/"
    stdout: str = ""
    stderr: str = ""
    stdin: str = "/dev/null"
    open_mode: str = "truncate"
    command: str = ""
    argv: list[str] = field(default_factory=list)  # the batch script's arguments
    uid: int = 0
    gid: int = 0
    submit_host: str = ""
    next_step: int = 0
    cancelled_by: int | None = None
    # How the current run is being ended (scancel, time limit, scontrol requeue): [final state
    # name, reason or hold kind], saved before any agent is told, so a restarted controller
    # finishes what it had acknowledged.
    ending: list | None = None
    launched: bool = False  # the agent has the batch script of this incarnation
    tres_bind: str | None = None  # scontrol update TresBind= (kept; minislurm binds GPUs by --gpus only)

    @classmethod
    def from_request(cls, request: dict, batch: bool, uid: int, gid: int) -> "Live":
        """What a submission (``POST /jobs``) says about how to run the job."""
        spec = request.get("spec", {})
        return cls(batch=batch, script=request.get("script"), environment=dict(request.get("environment", {})),
                   work_dir=request.get("work_dir") or "/", stdout=request.get("stdout", ""),
                   stderr=request.get("stderr", ""), stdin=request.get("stdin") or "/dev/null",
                   open_mode=spec.get("open_mode") or "truncate", command=request.get("command", ""),
                   argv=[str(a) for a in request.get("argv", [])], uid=uid, gid=gid,
                   submit_host=request.get("submit_host", ""))


def srun_owned(job: Job, live: Live) -> bool:
    """An allocation that lives while its srun (or salloc) is heard from (InactiveLimit); a
    heterogeneous job's later components have no script either, but belong to its leader's."""
    return not live.batch and job.het_job_id is None


def _inf(x: float) -> float | str:
    return "INFINITE" if x == math.inf else x


def _uninf(x):
    return math.inf if x == "INFINITE" else x


def job_to_dict(job: Job, live: Live, node_names: list[str]) -> dict:
    d = {}
    for f in fields(Job):
        value = getattr(job, f.name)
        if f.name == "shape":
            value = asdict(value)
        elif f.name == "alloc":
            value = None if value is None else {
                "nodes": [node_names[n] for n in value.nodes], "cpus": list(value.cpus),
                "mem": list(value.mem), "gpus": [list(g) for g in value.gpus]}
        elif f.name == "dependency":
            value = None if value is None else {
                "terms": [[k, list(ids)] for k, ids in value.terms], "any_of": value.any_of}
        elif f.name == "state":
            value = value.name
        elif f.name in ("req_nodes", "exc_nodes"):
            value = sorted(value)
        elif f.name == "spec":
            value = spec_to_dict(value) if value is not None else None
        elif f.name == "time_limit":
            value = _inf(value)
        d[f.name] = value
    d["live"] = asdict(live)
    return d


def job_from_dict(d: dict, node_index: dict[str, int]) -> tuple[Job, Live]:
    kw = {}
    for f in fields(Job):
        value = d.get(f.name)
        if f.name == "shape":
            value = Shape(**value)
        elif f.name == "alloc" and value is not None:
            value = Allocation(tuple(node_index[n] for n in value["nodes"]), tuple(value["cpus"]),
                               tuple(value["mem"]), tuple(tuple(g) for g in value["gpus"]))
        elif f.name == "dependency" and value is not None:
            value = Dependency(tuple((k, tuple(ids)) for k, ids in value["terms"]), value["any_of"])
        elif f.name == "state":
            value = JobState[value]
        elif f.name in ("req_nodes", "exc_nodes"):
            value = frozenset(value or ())
        elif f.name == "spec" and value is not None:
            value = spec_from_dict(value)
        elif f.name == "time_limit":
            value = _uninf(value)
        if value is not None or f.name in d:
            kw[f.name] = value
    return Job(**kw), Live(**d.get("live", {}))


_ITEM_TEXT = {DependencyOutcome.OK: "fulfilled", DependencyOutcome.WAIT: "unfulfilled",
              DependencyOutcome.NEVER: "failed"}


def dependency_text(job: Job, state: ClusterState) -> str | None:
    """The dependency as scontrol and squeue ``%E`` show it: each remaining item with its state,
    ``afterok:12(unfulfilled),afterany:13(unfulfilled)``; fulfilled items drop out, and
    nothing left prints as ``(null)``.  An item that can never be met is ``(failed)``.  Each
    item is judged by the scheduler's own rule (:func:`minislurm.sched.depend.item_outcome`)."""
    if job.dependency is None:
        return None
    items = []
    for kind, ids in job.dependency.terms:
        if kind == "singleton":
            items.append("singleton(unfulfilled)")
            continue
        for target_id in ids:
            outcome = item_outcome(kind, target_id, job, state.jobs, state.array_tasks)
            if outcome != DependencyOutcome.OK:
                items.append(f"{kind}:{target_id}({_ITEM_TEXT[outcome]})")
    return ("?" if job.dependency.any_of else ",").join(items) or None
