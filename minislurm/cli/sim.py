"""``minislurm sim``: replay a trace and write jobs.csv, summary.json and charts."""

from __future__ import annotations

import json
import sys

from minislurm.cli.parsing import ArgumentParser


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="minislurm sim", description="Replay a workload trace with minislurm's scheduler.")
    p.add_argument("--trace", required=True, help="trace file (.swf, Philly CSV, openb CSV, native CSV; .gz ok)")
    p.add_argument("--format", choices=["swf", "philly", "openb", "native"], help="default: detect")
    p.add_argument("--config", help="a slurm.conf describing the cluster (instead of the node flags); its "
                   "PriorityType holds, with the accounts.conf beside it for fair share")
    p.add_argument("--nodes", type=int, default=128)
    p.add_argument("--cpus-per-node", type=int, default=32)
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--policy", choices=["conservative", "easy", "fifo"],
                   help="default: conservative, or what --config's file says")
    p.add_argument("--bf-max-job-test", type=int, help="default: 500, or --config's bf_max_job_test")
    p.add_argument("--bf-interval", type=float,
                   help="seconds between backfill passes (default: 30, or --config's bf_interval)")
    p.add_argument("--limit-jobs", type=int, help="replay only the first M jobs")
    p.add_argument("--mtbf-hours", type=float, help="inject node failures with this mean time between failures")
    p.add_argument("--repair-hours", type=float, default=1.0)
    p.add_argument("--failure-shape", type=float, default=1.0,
                   help="Weibull shape k of the up-times: 1 exponential (default), < 1 bursts after each repair")
    p.add_argument("--lemon-fraction", type=float, default=0.0,
                   help="share of nodes that are lemons (default 0)")
    p.add_argument("--lemon-factor", type=float, default=10.0,
                   help="how many times as often a lemon fails (default 10)")
    p.add_argument("--checkpoint-interval", type=float, help="seconds between job checkpoints (failures only)")
    p.add_argument("--checkpoint-cost", type=float, default=0.0,
                   help="seconds each checkpoint takes to write (default 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-charts", action="store_true")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    checks = [(name, "must be at least 1", lambda v: v >= 1)
              for name in ("nodes", "cpus_per_node", "bf_max_job_test", "limit_jobs")]
    checks += [("gpus_per_node", "must not be negative", lambda v: v >= 0),
               ("repair_hours", "must not be negative", lambda v: v >= 0),
               ("checkpoint_cost", "must not be negative", lambda v: 0 <= v < float("inf")),
               ("lemon_fraction", "must be between 0 and 1", lambda v: 0 <= v <= 1),
               ("lemon_factor", "must be at least 1", lambda v: 1 <= v < float("inf"))]
    checks += [(name, "must be a positive number", lambda v: 0 < v < float("inf"))
               for name in ("bf_interval", "mtbf_hours", "checkpoint_interval", "failure_shape")]
    for name, rule, ok in checks:
        value = getattr(args, name)
        if value is not None and not ok(value):
            print(f"minislurm sim: error: --{name.replace('_', '-')} {rule}", file=sys.stderr)
            return 1
    from minislurm.sim.replay import ReplayOptions, replay

    config = accounts = None
    try:
        if args.config:
            from minislurm.core.slurmconf import load
            from pathlib import Path
            config = load(args.config)
            accounts = Path(args.config).resolve().parent / "accounts.conf"  # as slurmctld finds it
        opts = ReplayOptions(
            trace=args.trace, fmt=args.format, nodes=args.nodes, cpus_per_node=args.cpus_per_node,
            gpus_per_node=args.gpus_per_node, policy=args.policy, bf_max_job_test=args.bf_max_job_test,
            bf_interval=args.bf_interval, limit_jobs=args.limit_jobs, config=config, accounts=accounts, mtbf_h=args.mtbf_hours,
            repair_h=args.repair_hours, failure_shape=args.failure_shape, lemon_fraction=args.lemon_fraction,
            lemon_factor=args.lemon_factor, checkpoint_interval_s=args.checkpoint_interval,
            checkpoint_cost_s=args.checkpoint_cost, seed=args.seed,
            progress=not args.no_progress and sys.stderr.isatty(), charts=not args.no_charts)
        summary = replay(opts, args.out)
    except (OSError, ValueError) as exc:
        print(f"minislurm sim: error: {exc}", file=sys.stderr)
        return 1
    for warning in opts.warnings:
        print(f"minislurm sim: warning: {warning}", file=sys.stderr)
    print(json.dumps(summary, indent=2))
    return 0
