"""Replay a trace end to end: read it, simulate it, write jobs.csv, summary.json and two charts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from minislurm.core.accounts import parse_accounts
from minislurm.core.cluster import ClusterConfig, simple_cluster
from minislurm.sched.sharebook import FairShareBook
from minislurm.sim import metrics
from minislurm.sim.engine import Simulator
from minislurm.sim.failures import FailureModel
from minislurm.sim.traces import read_trace


@dataclass
class ReplayOptions:
    trace: str
    fmt: str | None = None
    nodes: int = 128
    cpus_per_node: int = 32
    gpus_per_node: int = 8
    mem_per_node: int = 0
    # None: the slurm.conf's value with ``config``, else Slurm's default (conservative, 500, 30 s)
    policy: str | None = None
    bf_max_job_test: int | None = None
    bf_interval: float | None = None
    limit_jobs: int | None = None
    config: ClusterConfig | None = None  # from a slurm.conf; overrides the node flags
    accounts: str | Path | None = None  # accounts.conf (associations, shares) for fair share
    mtbf_h: float | None = None
    repair_h: float = 1.0
    failure_shape: float = 1.0  # Weibull k of the up-times (sim/failures.py)
    lemon_fraction: float = 0.0
    lemon_factor: float = 10.0
    checkpoint_interval_s: float | None = None
    checkpoint_cost_s: float = 0.0
    seed: int = 0
    progress: bool = False
    charts: bool = True
    warnings: list[str] = field(default_factory=list)


def cluster_for(opts: ReplayOptions) -> ClusterConfig:
    if opts.config is not None:
        cfg = opts.config
    else:
        cfg = simple_cluster(opts.nodes, cpus=opts.cpus_per_node, mem=opts.mem_per_node or 1,
                             gpus=opts.gpus_per_node)
    for name in ("policy", "bf_max_job_test", "bf_interval"):  # what was asked for beats the file
        if getattr(opts, name) is not None:
            setattr(cfg.sched, name, getattr(opts, name))
    if opts.config is None:  # a made-up cluster: first come, first served
        cfg.priority.type = "priority/basic"
    return cfg  # a slurm.conf's PriorityType holds (multifactor: fair share on the replay's clock)


def fairshare_book(cfg: ClusterConfig, accounts: str | Path | None):
    """The controller's fair-share book for a multifactor replay (the associations of
    ``accounts``, when given and present), or None."""
    if cfg.priority.type != "priority/multifactor":
        return None
    path = Path(accounts) if accounts else None
    if path is None or not path.exists():
        return FairShareBook(cfg)
    return FairShareBook(cfg, parse_accounts(path.read_text(), str(path), root_user=True))


def replay(opts: ReplayOptions, out: str | Path | None) -> dict:
    """Run one replay; returns the summary (also written to ``out/summary.json`` when ``out`` is given)."""
    cfg = cluster_for(opts)
    first = cfg.nodes[0]
    read = read_trace(opts.trace, opts.fmt, cores_per_node=first.cpus, gpus_per_node=first.gpus,
                      limit=opts.limit_jobs)
    opts.warnings.extend(read.warnings)
    if not read.jobs:
        why = f" ({read.skipped} unusable lines skipped)" if read.skipped else ""
        raise ValueError(f"no jobs to replay in {opts.trace}{why}")
    failures = FailureModel(opts.mtbf_h * 3600, opts.repair_h * 3600, opts.seed, shape=opts.failure_shape,
                            lemon_fraction=opts.lemon_fraction, lemon_factor=opts.lemon_factor) if opts.mtbf_h else None
    sim = Simulator(cfg, read.jobs, failures=failures, checkpoint_interval=opts.checkpoint_interval_s,
                    checkpoint_cost=opts.checkpoint_cost_s, progress=opts.progress,
                    fairshare=fairshare_book(cfg, opts.accounts))
    records = sim.run()
    if sim.rejected:
        reasons: dict[str, list[int]] = {}
        for job_id, why in sim.rejected:
            reasons.setdefault(why, []).append(job_id)
        for why, ids in reasons.items():
            opts.warnings.append(f"{len(ids)} job{'s' if len(ids) != 1 else ''} rejected at "
                                 f"submission: {why} (first: trace job {ids[0]})")
    policy = cfg.sched.policy
    summary = metrics.summarize(records, sim.capacity, policy=policy, wall_s=sim.wall_s)
    summary.update(trace=str(opts.trace), format=read.fmt, skipped_lines=read.skipped,
                   rejected=len(sim.rejected), nodes=len(cfg.nodes),
                   cpus_per_node=first.cpus, gpus_per_node=first.gpus,
                   bf_max_job_test=cfg.sched.bf_max_job_test, passes=dict(sim.passes))
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        metrics.write_jobs_csv(records, out / "jobs.csv")
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if opts.charts:
            from minislurm.sim import charts  # matplotlib: a third of a second to import, only when drawing

            name = Path(opts.trace).name
            charts.gantt(records, sim.capacity, out / "gantt.png", title=f"{name}: {policy}")
            charts.utilization_chart(records, sim.capacity, out / "utilization.png", title=f"{name}: {policy}")
    return summary
