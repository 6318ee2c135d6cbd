"""``python -m minislurm.slurmd --name gpu01``: run one node agent in the foreground;
``--name 'gpu[001-032]' --faults FILE``: one process hosting those virtual nodes
(:mod:`minislurm.slurmd.host`)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from minislurm.common.auth import load_key
from minislurm.common.settings import controller_address, ctld_settings
from minislurm.core.hostlist import expand
from minislurm.core.slurmconf import load
from minislurm.lifecycle import until_stopped
from minislurm.slurmd.agent import NodeAgent
from minislurm.slurmd.gpus import detect_nvidia
from minislurm.slurmd.host import Host


async def run(args) -> None:
    conf = Path(args.conf)
    cfg = load(conf)
    names = expand(args.name)
    unknown = [n for n in names if cfg.node(n) is None]
    if unknown:
        raise SystemExit(f"slurmd: fatal: node {unknown[0]} is not in {conf}")
    settings = ctld_settings(cfg, conf)
    _, addr, port = controller_address(cfg)
    key = load_key(settings.key_file)
    spool = args.spool if len(names) == 1 else None  # many nodes: one folder each, below --spool

    def make_agent(name: str) -> NodeAgent:
        node = cfg.node(name)
        gpus = node.gpus if args.gpus is None else (detect_nvidia() if args.gpus == "auto" else int(args.gpus))
        where = spool or (f"{args.spool}/{name}" if args.spool else f"/tmp/minislurm-spool/{name}")
        return NodeAgent(name, key=key, ctld=args.ctld or f"{addr}:{port}", conf=str(conf.resolve()),
                         cpus=args.cpus or node.cpus, memory=args.memory or node.real_memory, gpus=gpus,
                         gpu_type=node.gpu_type, spool=where, bind=args.bind, addr=args.addr)

    if len(names) > 1 and args.port:
        raise SystemExit("slurmd: fatal: --port names one node's port: not with many nodes")
    host = Host(make_agent, names, Path(args.faults) if args.faults else None,
                ports={names[0]: args.port} if args.port else None)
    await host.start()
    await until_stopped(args.exit_with_parent)
    await host.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="slurmd", description="minislurm node agent")
    p.add_argument("--name", required=True, help="this node's NodeName, or a host list of the virtual "
                                                  "nodes this process hosts (gpu[001-032])")
    p.add_argument("--faults", help="virtual nodes' faults file, read again on SIGHUP (see minislurm.slurmd.host)")
    p.add_argument("--conf", default=os.environ.get("SLURM_CONF"), help="slurm.conf")
    p.add_argument("--ctld", help="controller host:port (default: from slurm.conf)")
    p.add_argument("--gpus", help="GPU count to report, or 'auto' for nvidia-smi (default: as configured)")
    p.add_argument("--cpus", type=int)
    p.add_argument("--memory", type=int)
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--addr", help="the name or address the controller and srun reach this agent at "
                                   "(Slurm's NodeAddr; default: the --bind address)")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--spool")
    p.add_argument("--log-file")
    p.add_argument("--exit-with-parent", action="store_true",
                   help="also stop when the process that started this one ends")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    if not args.conf:
        print("slurmd: error: no slurm.conf (use --conf or set SLURM_CONF)", file=sys.stderr)
        return 1
    logging.basicConfig(filename=args.log_file, level=logging.DEBUG if args.verbose else logging.INFO,
                        format=f"[%(asctime)s] {args.name} %(levelname)s: %(message)s")
    watch_children_by_pidfd()
    asyncio.run(run(args))
    return 0


def watch_children_by_pidfd() -> None:
    """Learn of a task's exit from the event loop (a pidfd per child), not from a thread per
    child: Python 3.11's default watcher starts a thread for every task, which a wide step
    (``srun -N256``, 32 virtual nodes per agent) pays for at every launch.  Python 3.12 does this
    by itself; a kernel without pidfd_open (before Linux 5.3) keeps the default."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return
    asyncio.set_child_watcher(asyncio.PidfdChildWatcher())


if __name__ == "__main__":
    sys.exit(main())
