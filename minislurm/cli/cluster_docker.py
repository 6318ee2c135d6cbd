"""``minislurm cluster up|status|down --docker``, ``cluster shell`` and ``cluster add-users``.

The docker cluster (:class:`~minislurm.cluster.docker.DockerCluster`): a controller, GPU nodes
and a login node as containers.  ``up`` builds the image when it is missing, starts the
containers and returns when every node is idle; on a folder that holds a cluster it starts what
is stopped and changes nothing else.  Anything that cannot work is refused before a container
exists, in one line; a failed start removes what it made.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from minislurm.cli.main import command_name
from minislurm.cluster.compose import HUB_PORT  # JupyterHub's usual port: on this host's 127.0.0.1 too
from minislurm.cluster.docker import DEFAULT_DIR


def _fail(message: str) -> int:
    print(f"minislurm cluster: error: {message}", file=sys.stderr)
    return 1


def _usage(cluster, what: str) -> None:
    folder = "" if cluster.dir == DEFAULT_DIR else f" --dir {cluster.dir}"
    me = command_name()
    print(what)
    print(f"  use it:   eval \"$({me} env --docker{folder})\"   then sinfo, sbatch, squeue, ... "
          f"(they run on the login node as {cluster.user})")
    print(f"  a shell:  {me} cluster shell{folder}        (the login node, as {cluster.user}; "
          f"/home is shared by every node)")
    print(f"  stop it:  {me} cluster down --docker{folder}")


def _shape_conflict(args, cluster) -> str | None:
    have = {"nodes": cluster.shape.nodes, "gpus_per_node": cluster.shape.gpus_per_node,
            "cpus_per_node": cluster.shape.cpus_per_node, "mem": cluster.shape.mem}
    for key, value in have.items():
        given = getattr(args, key, None)
        if given is not None and given != value:
            return f"it has --{key.replace('_', '-')} {value}"
    if args.gpu and not cluster.gpu:
        return "it was started without --gpu"
    if (args.hub or args.hub_port) and not cluster.shape.hub_port:
        return "it was started without --hub"
    return None


def up(args, shape: dict) -> int:
    from minislurm.cluster.docker import DockerCluster
    from minislurm.cluster.engine import EngineError
    folder = Path(args.dir or DEFAULT_DIR)
    try:
        if DockerCluster.recorded(folder):
            cluster = DockerCluster.from_dir(folder)
            conflict = _shape_conflict(args, cluster)
            if conflict:
                return _fail(f"{folder} holds a docker cluster already and {conflict}: `minislurm cluster down "
                             f"--docker` first (it removes the cluster, its jobs and /home), or choose another --dir")
            if len(cluster.running()) == len(cluster.roles):
                _usage(cluster, f"minislurm docker cluster is already running: {cluster.describe()}")
                return 0
        else:
            cluster = DockerCluster(shape["nodes"], shape["gpus_per_node"], shape["cpus_per_node"], shape["mem"],
                                    dir=folder, gpu=args.gpu, jupyter_port=args.jupyter_port,
                                    hub_port=args.hub_port or (HUB_PORT if args.hub else None))
        cluster.up(timeout=120)
        from minislurm.cli.env import write_docker_shims
        write_docker_shims(cluster)
    except (EngineError, TimeoutError, RuntimeError, OSError, ValueError) as exc:
        return _fail(str(exc))
    _usage(cluster, f"minislurm docker cluster is up: {cluster.describe()}")
    if cluster.shape.jupyter_port:
        print(f"  JupyterLab: http://127.0.0.1:{cluster.shape.jupyter_port}/ (its token: docker logs "
              f"{cluster.container('login')})")
    if cluster.shape.hub_port:
        print(f"  JupyterHub: {cluster.hub_url}/ (students log in with the passwords of "
              f"`{command_name()} cluster add-users --file students.csv`; each server is a Slurm job)")
    return 0


def _recorded(args):
    from minislurm.cluster.docker import DockerCluster
    folder = Path(args.dir or DEFAULT_DIR)
    return DockerCluster.from_dir(folder) if DockerCluster.recorded(folder) else None


def down(args) -> int:
    from minislurm.cluster.docker import DockerCluster
    from minislurm.cluster.engine import EngineError, check_engine
    folder = Path(args.dir or DEFAULT_DIR)
    try:
        check_engine()
        cluster = _recorded(args) or DockerCluster(dir=folder, build=False)
        cluster.down()
    except EngineError as exc:
        return _fail(str(exc))
    for name in ("compose.yaml", "compose.gpu.yaml", ".env"):
        (folder / name).unlink(missing_ok=True)
    for sub in ("bin", "client"):
        shutil.rmtree(folder / sub, ignore_errors=True)
    print(f"minislurm docker cluster is down: containers, network and volumes of {cluster.project} removed")
    return 0


def status(args) -> int:
    from minislurm.cluster.engine import EngineError, check_engine, docker
    try:
        check_engine()
    except EngineError as exc:
        return _fail(str(exc))
    cluster = _recorded(args)
    if cluster is None:
        print(f"no docker cluster in {args.dir or DEFAULT_DIR}")
        return 1
    ok = True
    for name in cluster.roles:
        fmt = ("{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}} "
               f'{{{{with index .NetworkSettings.Networks "{cluster.network}"}}}}{{{{.IPAddress}}}}{{{{end}}}}')
        r = docker("inspect", "-f", fmt, cluster.container(name), check=False)
        words = r.stdout.split() if r.returncode == 0 else ["absent"]
        ok &= words[0] == "running"
        print(f"{cluster.container(name):<24} {' '.join(words)}")
    return 0 if ok else 1


def shell(args) -> int:
    from minislurm.cluster.engine import EngineError, check_engine
    try:
        check_engine()
    except EngineError as exc:
        return _fail(str(exc))
    cluster = _recorded(args)
    if cluster is None:
        return _fail(f"no docker cluster in {args.dir or DEFAULT_DIR} (minislurm cluster up --docker first; a "
                     f"local cluster has no login node: eval \"$(minislurm env)\" in this shell instead)")
    try:
        argv = cluster.exec_argv(*(args.command or ["bash", "-l"]), tty=sys.stdin.isatty(), where=args.node,
                                 user=args.user)
    except EngineError as exc:
        return _fail(str(exc))
    os.execvp(argv[0], argv)
    return 0


def add_users(args) -> int:
    from minislurm.cluster.engine import EngineError, check_engine
    from minislurm.cluster.passwords import PasswordError, read_roster
    names, passwords = list(args.names), {}
    try:
        if args.file and args.file.endswith(".csv"):  # the instructor's roster: user and password columns
            roster = read_roster(Path(args.file).read_text())
            names += [word for word, _ in roster]
            passwords = {word.partition(":")[0]: password for word, password in roster}
        elif args.file:
            names += [w for line in Path(args.file).read_text().splitlines()
                      for w in line.split("#", 1)[0].split()]
        check_engine()
    except (OSError, EngineError, PasswordError) as exc:
        return _fail(str(exc))
    cluster = _recorded(args)
    if cluster is None:
        return _fail(f"no docker cluster in {args.dir or DEFAULT_DIR} (minislurm cluster up --docker first)")
    if not names:
        return _fail("no user names (NAME[:UID] ... or --file)")
    try:
        added, errors = cluster.add_users(*names, operator=args.operator, passwords=passwords)
    except (EngineError, TimeoutError) as exc:
        return _fail(str(exc))
    role = ", an operator" if args.operator else ""
    for name, uid, what in added:
        login = ", a hub password" if name in passwords else ""
        print(f"{name:<16} uid {uid:<6} {what}{role}: home /home/{name}, token /etc/slurm/tokens/{name}{login}")
    for error in errors:
        _fail(error)
    return 1 if errors else 0
