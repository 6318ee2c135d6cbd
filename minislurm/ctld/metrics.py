"""OpenMetrics for Prometheus: the controller's ``/metrics`` endpoints, as Slurm 25.11's
metrics/openmetrics plugin names them (``slurm_jobs_pending``, ``slurm_node_gpus_alloc{node=...}``,
``slurm_partition_jobs_gpus_alloc{partition=...}``, ``slurm_bf_cycle_last``, ...).

    GET /metrics                      the endpoints below
    GET /metrics/jobs                 jobs by state and what the running ones hold
    GET /metrics/jobs-users-accts     the same per user and per account
    GET /metrics/nodes                nodes by state, and each node's CPUs, GPUs and memory
    GET /metrics/partitions           the same per partition
    GET /metrics/scheduler            sdiag's counters (minislurm.ctld.stats)

The help texts are minislurm's own words.  Two series Slurm does not have are minislurm's
additions, named in its style: ``slurm_partition_gpus_idle`` and ``slurm_partition_gpus_down``.
Like Slurm's (when ``PrivateData`` is unset) the endpoints need no token: they show counts,
never a job's name, script or paths.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from minislurm.core.state import ClusterState
from minislurm.core.states import JobState, NodeState
from minislurm.ctld.stats import Stats

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
ENDPOINTS = ("jobs", "jobs-users-accts", "nodes", "partitions", "scheduler")
JOB_STATES = {JobState.PENDING: "pending", JobState.RUNNING: "running", JobState.COMPLETED: "completed",
              JobState.CANCELLED: "cancelled", JobState.FAILED: "failed", JobState.TIMEOUT: "timeout",
              JobState.NODE_FAIL: "node_failed", JobState.OUT_OF_MEMORY: "outofmemory"}
MB = 1024 * 1024


class Exposition:
    """Metric families in the order added, each ``# HELP``, ``# TYPE`` and its samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, help_text: str, samples: Iterable[tuple[dict, float]], kind: str = "gauge") -> None:
        samples = list(samples)
        if not samples:
            return
        self.lines += [f"# HELP slurm_{name} {help_text}", f"# TYPE slurm_{name} {kind}"]
        for labels, value in samples:
            tags = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            self.lines.append(f"slurm_{name}{{{tags}}} {value:g}" if tags else f"slurm_{name} {value:g}")

    def one(self, name: str, help_text: str, value: float, kind: str = "gauge") -> None:
        self.family(name, help_text, [({}, value)], kind)

    def text(self) -> str:
        return "\n".join(self.lines + ["# EOF"]) + "\n"


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _job_tally(jobs) -> dict[str, float]:
    """Jobs by state, held ones, and what the running ones hold."""
    t: Counter = Counter()
    for job in jobs:
        t[""] += 1
        t[JOB_STATES.get(job.state, "other")] += 1
        t["hold"] += bool(job.hold and job.pending)
        if job.state is JobState.RUNNING and job.alloc is not None:
            t["cpus_alloc"] += job.alloc.num_cpus
            t["gpus_alloc"] += job.alloc.num_gpus
            t["nodes_alloc"] += len(job.alloc.nodes)
            t["memory_alloc"] += sum(job.alloc.mem) * MB
    return t


JOB_SERIES = [("", "jobs known to the controller"), ("pending", "jobs waiting"), ("running", "jobs running"),
              ("completed", "jobs that completed"), ("cancelled", "jobs cancelled"), ("failed", "jobs that failed"),
              ("timeout", "jobs ended by their time limit"), ("node_failed", "jobs ended by a node failure"),
              ("outofmemory", "jobs ended out of memory"), ("hold", "jobs held"),
              ("cpus_alloc", "CPUs held by running jobs"), ("gpus_alloc", "GPUs held by running jobs"),
              ("nodes_alloc", "nodes held by running jobs"), ("memory_alloc", "memory bytes held by running jobs")]


def _job_families(out: Exposition, groups: dict[str, dict], prefix: str, label: str | None) -> None:
    for key, text in JOB_SERIES:
        name = f"{prefix}jobs" + (f"_{key}" if key else "")
        out.family(name, text, (({label: g} if label else {}, tally[key]) for g, tally in groups.items()))


def jobs(state: ClusterState) -> str:
    out = Exposition()
    _job_families(out, {"": _job_tally(state.jobs.values())}, "", None)
    return out.text()


def users_and_accounts(state: ClusterState) -> str:
    out = Exposition()
    for prefix, label, key in (("user_", "username", "user"), ("account_", "account", "account")):
        groups: dict[str, list] = {}
        for job in state.jobs.values():
            groups.setdefault(getattr(job, key), []).append(job)
        _job_families(out, {g: _job_tally(js) for g, js in sorted(groups.items())}, prefix, label)
    return out.text()


# NodeTable.state (sinfo's base state) -> the metric's word
NODE_STATES = {NodeState.IDLE: "idle", NodeState.MIXED: "mixed", NodeState.ALLOCATED: "alloc",
               NodeState.DOWN: "down", NodeState.DRAINED: "drained", NodeState.DRAINING: "draining"}


def nodes(state: ClusterState) -> str:
    n, out = state.nodes, Exposition()
    names = list(n.names)
    states = Counter(NODE_STATES.get(n.state(i)) for i in range(len(names)))
    out.one("nodes", "nodes in the cluster", len(names))
    for key in ("alloc", "mixed", "idle", "down", "drained", "draining"):
        out.one(f"nodes_{key}", f"nodes {key}", states[key])
    out.one("nodes_drain", "nodes drained or draining", states["drained"] + states["draining"])
    per = [("node_cpus", "CPUs of the node", n.cap_cpu), ("node_gpus", "GPUs of the node", n.cap_gpu)]
    for name, text, column in per:
        out.family(name, text, (({"node": m}, int(column[i])) for i, m in enumerate(names)))
    out.family("node_cpus_alloc", "CPUs of the node held by jobs",
               (({"node": m}, int(n.cap_cpu[i] - n.free_cpu[i])) for i, m in enumerate(names)))
    out.family("node_cpus_idle", "CPUs of the node free", (({"node": m}, int(n.free_cpu[i])) for i, m in enumerate(names)))
    out.family("node_gpus_alloc", "GPUs of the node held by jobs",
               (({"node": m}, int(n.cap_gpu[i] - n.free_gpu[i])) for i, m in enumerate(names)))
    out.family("node_memory_bytes", "memory of the node, bytes",
               (({"node": m}, int(n.cap_mem[i]) * MB) for i, m in enumerate(names)))
    out.family("node_memory_alloc_bytes", "memory of the node held by jobs, bytes",
               (({"node": m}, int(n.cap_mem[i] - n.free_mem[i]) * MB) for i, m in enumerate(names)))
    return out.text()


def partitions(state: ClusterState) -> str:
    n, out = state.nodes, Exposition()
    out.one("partitions", "partitions in the cluster", len(state.partitions))
    rows = []
    for name, part in state.partitions.items():
        idx = [n.index[m] for m in part.nodes if m in n.index]
        down = [i for i in idx if n.down[i] or n.drain[i]]
        tally = _job_tally(j for j in state.jobs.values() if j.partition == name)
        rows.append(({"partition": name}, idx, down, tally))
    series = [("partition_nodes", "nodes of the partition", lambda idx, down, t: len(idx)),
              ("partition_cpus", "CPUs of the partition", lambda idx, down, t: int(sum(n.cap_cpu[i] for i in idx))),
              ("partition_gpus", "GPUs of the partition", lambda idx, down, t: int(sum(n.cap_gpu[i] for i in idx))),
              ("partition_gpus_idle", "GPUs of the partition free on nodes that are up (minislurm's)",
               lambda idx, down, t: int(sum(n.free_gpu[i] for i in idx if i not in down))),
              ("partition_gpus_down", "GPUs of the partition on DOWN or DRAINED nodes (minislurm's)",
               lambda idx, down, t: int(sum(n.cap_gpu[i] for i in down))),
              ("partition_nodes_down", "nodes of the partition down", lambda idx, down, t: int(sum(n.down[i] for i in idx))),
              ("partition_nodes_drain", "nodes of the partition drained or draining",
               lambda idx, down, t: int(sum(n.drain[i] for i in idx)))]
    for name, text, value in series:
        out.family(name, text, ((labels, value(idx, down, t)) for labels, idx, down, t in rows))
    for key, text in JOB_SERIES[1:]:
        out.family(f"partition_jobs_{key}", text, ((labels, t[key]) for labels, _, _, t in rows))
    out.family("partition_jobs", "jobs of the partition", ((labels, t[""]) for labels, _, _, t in rows))
    return out.text()


def scheduler(stats: Stats, server_threads: int, agents: int) -> str:
    out, main, bf = Exposition(), stats.main, stats.backfill
    for name, text, value in [
            ("server_thread_cnt", "requests being served", server_threads),
            ("agent_cnt", "calls to node agents not yet answered", agents),
            ("agent_queue_size", "messages waiting to be sent to agents (none: sent at once)", 0),
            ("sdiag_jobs_submitted", "jobs submitted since the last reset", stats.submitted),
            ("sdiag_jobs_started", "jobs started since the last reset", stats.started),
            ("sdiag_jobs_completed", "jobs completed since the last reset", stats.completed),
            ("sdiag_jobs_canceled", "jobs cancelled since the last reset", stats.canceled),
            ("sdiag_jobs_failed", "jobs that failed to launch since the last reset", stats.failed),
            ("schedule_cycle_cnt", "main scheduling cycles", main.count),
            ("schedule_cycle_last", "the last main cycle's time, microseconds", main.last_us),
            ("schedule_cycle_max", "the longest main cycle, microseconds", main.max_us),
            ("schedule_cycle_tot", "all main cycles' time, microseconds", main.total_us),
            ("schedule_cycle_depth", "jobs the main cycles looked at, in all", main.depth_total),
            ("schedule_queue_len", "jobs queued at the last main cycle", main.last_queue),
            ("sched_mean_cycle", "mean main cycle time, microseconds", main.total_us // max(1, main.count)),
            ("bf_cycle_cnt", "backfill cycles", bf.count),
            ("bf_cycle_last", "the last backfill cycle's time, microseconds", bf.last_us),
            ("bf_cycle_max", "the longest backfill cycle, microseconds", bf.max_us),
            ("bf_cycle_tot", "all backfill cycles' time, microseconds", bf.total_us),
            ("bf_mean_cycle", "mean backfill cycle time, microseconds", bf.total_us // max(1, bf.count)),
            ("bf_last_depth", "jobs the last backfill cycle tested", bf.last_depth),
            ("bf_depth_tot", "jobs backfill cycles tested, in all", bf.depth_total),
            ("bf_queue_len", "jobs queued at the last backfill cycle", bf.last_queue),
            ("backfilled_jobs", "jobs started by backfill since the last reset", stats.backfilled),
            ("bf_when_last_cycle", "when the last backfill cycle ran (epoch seconds)", bf.last_when or 0)]:
        out.one(name, text, value)
    return out.text()


def index() -> str:
    return "".join(f"/metrics/{e}\n" for e in ENDPOINTS)
