"""``minislurm cluster up|down|status``: a local lab cluster that keeps running in the background."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from minislurm.cli.main import ArgumentParser

DEFAULT_DIR = Path.home() / ".minislurm" / "cluster"


def _pids(folder: Path) -> list[tuple[str, int]]:
    try:
        return [(n, int(p)) for n, p in (line.split() for line in (folder / "pids").read_text().splitlines())]
    except (OSError, ValueError):
        return []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def up(args) -> int:
    from minislurm.cluster.local import LocalCluster
    folder = Path(args.dir)
    if any(_alive(p) for _, p in _pids(folder)):
        print(f"minislurm cluster: error: a cluster is already running in {folder} "
              f"(`minislurm cluster down --dir {folder}` first)", file=sys.stderr)
        return 1
    if args.netns and os.geteuid() != 0:
        print("minislurm cluster: error: --netns needs root (network namespaces)", file=sys.stderr)
        return 1
    cluster = LocalCluster(args.nodes, args.gpus_per_node, args.cpus_per_node, args.mem, dir=folder,
                           conf=args.conf, netns=args.netns, outlive=True)
    try:
        cluster.up(timeout=60)
    except (RuntimeError, TimeoutError, OSError) as exc:
        cluster.down()
        print(f"minislurm cluster: error: {exc}", file=sys.stderr)
        return 1
    names = [n.name for n in cluster.config.nodes]
    print(f"minislurm cluster is up: {len(names)} nodes, controller on port {cluster.port}")
    print(f"  use it:   eval \"$(minislurm env --dir {folder})\"   then sinfo, sbatch, squeue, ...")
    print(f"  stop it:  minislurm cluster down --dir {folder}")
    return 0


def down(args) -> int:
    from minislurm.cluster.local import stop_process
    folder = Path(args.dir)
    entries = _pids(folder)
    if not entries:
        print(f"minislurm cluster: no cluster recorded in {folder}")
        return 0
    for name, pid in reversed(entries):  # agents first: they stop their jobs
        if _alive(pid):
            stop_process(pid, alive=lambda pid=pid: _alive(pid))
    (folder / "pids").unlink(missing_ok=True)
    if (folder / "netns").exists():
        from minislurm.cluster.netns import Network
        tag, *nodes = (folder / "netns").read_text().split()
        Network(tag, nodes).destroy()
        (folder / "netns").unlink()
    print("minislurm cluster is down")
    return 0


def status(args) -> int:
    folder = Path(args.dir)
    entries = _pids(folder)
    if not entries:
        print(f"no cluster in {folder}")
        return 1
    for name, pid in entries:
        print(f"{name:<16} pid {pid:<8} {'running' if _alive(pid) else 'stopped'}")
    return 0 if all(_alive(p) for _, p in entries) else 1


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="minislurm cluster", description="start, inspect or stop a local cluster")
    sub = p.add_subparsers(dest="action", required=True)
    u = sub.add_parser("up", help="start the controller and node agents in the background")
    u.add_argument("--nodes", type=int, default=4)
    u.add_argument("--gpus-per-node", type=int, default=8)
    u.add_argument("--cpus-per-node", type=int, default=32)
    u.add_argument("--mem", type=int, default=256_000, help="MB per node")
    u.add_argument("--conf", help="a slurm.conf to use instead of the flags")
    u.add_argument("--netns", action="store_true", help="each agent in its own network namespace (root)")
    for s in (u, sub.add_parser("down", help="stop everything"), sub.add_parser("status")):
        s.add_argument("--dir", default=str(DEFAULT_DIR), help=f"cluster folder (default {DEFAULT_DIR})")
    args = p.parse_args(argv)
    return {"up": up, "down": down, "status": status}[args.action](args)
