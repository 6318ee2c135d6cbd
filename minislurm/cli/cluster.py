"""``minislurm cluster up|down|status``: a lab cluster that keeps running in the background.

Local (the default: processes of this machine) or, with ``--docker``, containers
(:mod:`minislurm.cli.cluster_docker`, which also has ``cluster shell`` and ``cluster add-users``).

``up`` on a folder that already holds a cluster resumes it (its slurm.conf, key, port and
saved state; only daemons that are not running are started) and never writes a new key, so
tokens handed out keep working; the shape flags may only repeat what the cluster has.
``up --system`` also installs the cluster as the machine's Slurm (:mod:`minislurm.cluster.system`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from minislurm.cli.main import command_name
from minislurm.cli.parsing import ArgumentParser

DEFAULT_DIR = Path.home() / ".minislurm" / "cluster"


def _pids(folder: Path) -> list[tuple[str, int]]:
    try:
        return [(n, int(p)) for n, p in (line.split() for line in (folder / "pids").read_text().splitlines())]
    except (OSError, ValueError):
        return []


def _alive(pid: int, folder: Path | None = None) -> bool:
    """A live process and, given the cluster folder, one of its daemons (their command line
    names its slurm.conf), not an unrelated process that got a dead daemon's pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
        if folder is None:
            return True
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return str(folder.absolute() / "slurm.conf").encode() in f.read().split(b"\0")
    except OSError:
        return False


def _running(folder: Path) -> dict[str, int]:
    return {name: pid for name, pid in _pids(folder) if _alive(pid, folder)}


# The flags that shape a new cluster (None when not given; a new cluster gets the default).
SHAPE = {"nodes": 4, "gpus_per_node": 8, "cpus_per_node": 32, "mem": 256_000}


def _shape_conflict(args, folder: Path) -> str | None:
    """Why the flags given cannot apply to the cluster recorded in ``folder``, if they cannot."""
    from minislurm.core.slurmconf import load
    cfg = load(folder / "slurm.conf")
    if "127.0.0.1" not in cfg.other.get("SlurmctldHost", ""):
        return "it was started with --netns, and its namespaces cannot be made again around it"
    if args.netns:
        return "it was started without --netns"
    if args.conf:
        theirs = load(args.conf)
        same = (theirs.nodes, theirs.partitions) == (cfg.nodes, cfg.partitions)
        return None if same else f"its nodes and partitions are not those of {args.conf}"
    have = {"nodes": len(cfg.nodes), "gpus_per_node": {n.gpus for n in cfg.nodes},
            "cpus_per_node": {n.cpus for n in cfg.nodes}, "mem": {n.real_memory for n in cfg.nodes}}
    for key, value in vars(args).items():
        if key in SHAPE and value is not None and have[key] not in (value, {value}):
            return f"it was not made with --{key.replace('_', '-')} {value}"
    return None


def _usage(folder: Path, what: str) -> None:
    me = command_name()
    print(what)
    print(f"  use it:   eval \"$({me} env --dir {folder})\"   then sinfo, sbatch, squeue, ...")
    print(f"  stop it:  {me} cluster down --dir {folder}")


def _resume(args, folder: Path) -> int:
    """``cluster up`` on a folder that holds a cluster: never a new key (tokens handed out
    must keep working), so either it is running, or it starts again on its own files."""
    from minislurm.cluster.local import LocalCluster
    try:
        conflict = _shape_conflict(args, folder)
    except (OSError, ValueError) as exc:  # an unreadable --conf or slurm.conf
        print(f"minislurm cluster: error: {exc}", file=sys.stderr)
        return 1
    if conflict:
        print(f"minislurm cluster: error: {folder} holds a cluster already and {conflict}.  `cluster up` "
              f"resumes a cluster as it was (same key, jobs and nodes); for a new one, choose another --dir, "
              f"or run `minislurm cluster down --dir {folder}` and remove the folder first", file=sys.stderr)
        return 1
    cluster = LocalCluster(dir=folder, conf=folder / "slurm.conf", outlive=True)
    running = _running(folder)
    names = [n.name for n in cluster.config.nodes]
    port = cluster.config.other.get("SlurmctldPort")
    if set(running) >= {"slurmctld", *cluster.agents}:
        _usage(folder, f"minislurm cluster is already running in {folder}: {len(names)} nodes, "
                       f"controller on port {port}")
        return 0
    try:
        cluster.resume(timeout=60, running=running)
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"minislurm cluster: error: {exc}", file=sys.stderr)
        return 1
    _usage(folder, f"minislurm cluster is up again: {len(names)} nodes, controller on port {port} "
                   f"(same key, jobs and nodes as before)")
    return 0


def up(args) -> int:
    folder = Path(args.dir)
    if args.system:
        from minislurm.cluster import system
        from minislurm.cluster.base import COMMANDS
        folder = folder.absolute()
        why = ["--system needs root (it writes /etc/slurm and /usr/local/bin)"] if os.geteuid() != 0 else \
            system.conflicts(folder, COMMANDS)
        if why:
            print(f"minislurm cluster: error: {'; '.join(why)}", file=sys.stderr)
            return 1
        code = _up(args, folder)
        if code == 0:
            system.install(folder, COMMANDS, sys.executable)
            print(f"This machine's Slurm is now this cluster: {system.ETC / 'slurm.conf'} and the commands in "
                  f"{system.BIN} (every shell, no `minislurm env` needed); `cluster down` takes them back.")
        return code
    return _up(args, folder)


def _up(args, folder: Path) -> int:
    from minislurm.cluster.local import LocalCluster
    if LocalCluster.recorded(folder):
        return _resume(args, folder)
    if _running(folder):
        print(f"minislurm cluster: error: a cluster is already running in {folder} "
              f"(`minislurm cluster down --dir {folder}` first)", file=sys.stderr)
        return 1
    if args.netns and os.geteuid() != 0:
        print("minislurm cluster: error: --netns needs root (network namespaces)", file=sys.stderr)
        return 1
    shape = {key: default if getattr(args, key) is None else getattr(args, key) for key, default in SHAPE.items()}
    try:
        cluster = LocalCluster(shape["nodes"], shape["gpus_per_node"], shape["cpus_per_node"], shape["mem"],
                               dir=folder, conf=args.conf, netns=args.netns, outlive=True,
                               nodes_per_agent=args.nodes_per_agent)
    except (ValueError, OSError, MemoryError) as exc:  # nothing started, nothing written
        print(f"minislurm cluster: error: {exc}", file=sys.stderr)
        return 1
    try:
        cluster.up(timeout=60 + len(cluster.config.nodes) / 4)
    except MemoryError as exc:  # checked before anything started
        print(f"minislurm cluster: error: {exc}", file=sys.stderr)
        return 1
    except (RuntimeError, TimeoutError, OSError) as exc:
        cluster.down()
        print(f"minislurm cluster: error: {exc}", file=sys.stderr)
        return 1
    names = [n.name for n in cluster.config.nodes]
    _usage(folder, f"minislurm cluster is up: {len(names)} nodes, controller on port {cluster.port}")
    return 0


def down(args) -> int:
    from minislurm.cluster.stop import stop_process
    folder = Path(args.dir)
    entries = _pids(folder)
    if not entries:
        print(f"minislurm cluster: no cluster recorded in {folder}")
        return 0
    for name, pid in reversed(entries):  # agents first: they stop their jobs
        if _alive(pid, folder):
            stop_process(pid, alive=lambda pid=pid: _alive(pid))
    (folder / "pids").unlink(missing_ok=True)
    if (folder / "system").exists():
        from minislurm.cluster import system
        system.remove(folder.absolute())
    if (folder / "netns").exists():
        from minislurm.cluster.netns import Network
        tag, *nodes = (folder / "netns").read_text().split()
        Network(tag, nodes).destroy()
        (folder / "netns").unlink()
    print("minislurm cluster is down")
    return 0


def node_fault(args) -> int:
    """``crash-node``/``cut-node``/``restore-node NAME``: one node fails or comes back.  A virtual
    node fails alone (its siblings run on); a node with a process of its own is killed
    (``crash-node``) and booted again (``restore-node``)."""
    from minislurm.cluster.local import LocalCluster
    from minislurm.cluster.stop import stop_process
    folder = Path(args.dir)
    if not LocalCluster.recorded(folder):
        print(f"minislurm cluster: error: no cluster recorded in {folder}", file=sys.stderr)
        return 1
    cluster = LocalCluster(dir=folder, conf=folder / "slurm.conf", outlive=True)
    if args.node not in cluster.host_of:
        print(f"minislurm cluster: error: Invalid node name specified: {args.node}", file=sys.stderr)
        return 1
    running = _running(folder)
    unit = cluster.host_of[args.node]
    if unit not in running and (len(cluster.agents[unit]) > 1 or args.action != "restore-node"):
        print(f"minislurm cluster: error: the agent process of {args.node} is not running", file=sys.stderr)
        return 1
    cluster._adopted = running
    if len(cluster.agents[unit]) > 1:
        cluster.fail_node(args.node, {"crash-node": "crashed", "cut-node": "cut"}.get(args.action))
    elif args.action == "crash-node":
        stop_process(running[unit], grace=0, alive=lambda: _alive(running[unit]))
    elif args.action == "cut-node":
        print("minislurm cluster: error: cut-node is for virtual nodes (--nodes-per-agent above 1); "
              "a node of its own process is cut off with --netns", file=sys.stderr)
        return 1
    elif unit not in running:
        cluster.resume(timeout=60, running=running)
    print(f"{args.node}: {dict(crash='crashed', cut='cut off', restore='restored')[args.action.removesuffix('-node')]}")
    return 0


def status(args) -> int:
    folder = Path(args.dir)
    entries = _pids(folder)
    if not entries:
        print(f"no cluster in {folder}")
        return 1
    for name, pid in entries:
        print(f"{name:<16} pid {pid:<8} {'running' if _alive(pid, folder) else 'stopped'}")
    return 0 if all(_alive(p, folder) for _, p in entries) else 1


def main(argv: list[str]) -> int:
    from minislurm.cli import cluster_docker as dock
    p = ArgumentParser(prog="minislurm cluster", description="start, inspect or stop a lab cluster")
    sub = p.add_subparsers(dest="action", required=True)
    u = sub.add_parser("up", help="start the controller and node agents in the background")
    u.add_argument("--nodes", type=int, help=f"default {SHAPE['nodes']}")
    u.add_argument("--gpus-per-node", type=int, help=f"default {SHAPE['gpus_per_node']}")
    u.add_argument("--cpus-per-node", type=int, help=f"default {SHAPE['cpus_per_node']}")
    u.add_argument("--mem", type=int, help=f"MB per node, default {SHAPE['mem']}")
    u.add_argument("--nodes-per-agent", type=int, metavar="K",
                   help="virtual nodes: K nodes per agent process (default: 8 processes at most)")
    u.add_argument("--conf", help="a slurm.conf to use instead of the flags (local clusters)")
    u.add_argument("--netns", action="store_true", help="each agent in its own network namespace (root)")
    u.add_argument("--system", action="store_true",
                   help="install as this machine's Slurm: /etc/slurm/slurm.conf and the commands in /usr/local/bin "
                        "(root; refused where a real Slurm is)")
    u.add_argument("--gpu", action="store_true", help="--docker: each node gets its own NVIDIA GPUs of this host")
    u.add_argument("--jupyter-port", type=int, help="--docker: JupyterLab on the login node, on this port of 127.0.0.1")
    u.add_argument("--hub", action="store_true",
                   help="--docker: JupyterHub for a class, each student's server a Slurm job (127.0.0.1:8000)")
    u.add_argument("--hub-port", type=int, help="--docker: JupyterHub on this port of 127.0.0.1 (implies --hub)")
    down_p, status_p = sub.add_parser("down", help="stop everything"), sub.add_parser("status")
    faults = [sub.add_parser(f"{what}-node", help=why) for what, why in (
        ("crash", "one node crashes (its jobs die; its agent is gone)"),
        ("cut", "one virtual node is cut off the network (its jobs run on, unheard)"),
        ("restore", "a crashed or cut-off node boots again, or comes back"))]
    for f in faults:
        f.add_argument("node", help="NodeName")
    sh = sub.add_parser("shell", help="a shell (or COMMAND) on the docker cluster's login node")
    sh.add_argument("--user", help="as this user of the cluster (default: the lab user)")
    sh.add_argument("--node", default="login", help="on this container instead: ctld, gpu01, ... (default login)")
    sh.add_argument("command", nargs="*", help="a command instead of a login shell")
    au = sub.add_parser("add-users", help="Unix accounts on the docker cluster, each with a home and a token")
    au.add_argument("names", nargs="*", metavar="NAME[:UID]")
    au.add_argument("--file", help="a file of user names (NAME[:UID], blank-separated, # comments), or a .csv "
                                   "with user and password columns (their JupyterHub logins; uid optional)")
    au.add_argument("--operator", action="store_true",
                    help="these users may act on every job and node (AdminLevel=Operator): the instructor")
    for s in (u, down_p, status_p):
        s.add_argument("--docker", action="store_true", help="containers instead of local processes")
    for s in (u, down_p, status_p, sh, au, *faults):
        s.add_argument("--dir", help=f"cluster folder (default {DEFAULT_DIR}, with --docker {dock.DEFAULT_DIR})")
    args = p.parse_args(argv)
    if args.action in ("shell", "add-users"):
        return {"shell": dock.shell, "add-users": dock.add_users}[args.action](args)
    if getattr(args, "docker", False):
        if args.action == "up" and (args.conf or args.netns or args.system):
            return dock._fail("--conf, --netns and --system are for local clusters (a docker cluster takes its "
                              "shape from the flags; its login node has /etc/slurm already)")
        shape = {key: default if getattr(args, key, None) is None else getattr(args, key) for key, default in SHAPE.items()}
        return {"up": lambda a: dock.up(a, shape), "down": dock.down, "status": dock.status}[args.action](args)
    if args.action == "up" and (args.gpu or args.jupyter_port or args.hub or args.hub_port):
        return dock._fail("--gpu, --jupyter-port and --hub are for docker clusters (add --docker)")
    args.dir = args.dir or str(DEFAULT_DIR)
    return {"up": up, "down": down, "status": status}.get(args.action, node_fault)(args)
