"""``eval "$(minislurm env)"``: put the real Slurm command names on PATH, for this shell only.

Installing minislurm never shadows a real Slurm: the names live in the cluster folder's
``bin/`` and only this opt-in puts them first on PATH.  With ``--docker`` they are the docker
cluster's: each runs the command on its login node as the lab user (``docker exec``), in the
folder of the shared /home that matches this shell's, else in the user's home.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from minislurm.cli.parsing import ArgumentParser
from minislurm.client import DEFAULT_DIR


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="minislurm env", description=__doc__.splitlines()[0])
    p.add_argument("--dir", help=f"cluster folder (default {DEFAULT_DIR}; with --docker ~/.minislurm/docker)")
    p.add_argument("--docker", action="store_true", help="the docker cluster's commands (on its login node)")
    args = p.parse_args(argv)
    if args.docker:
        return docker_env(args.dir)
    folder = Path(args.dir or DEFAULT_DIR).resolve()
    if not (folder / "slurm.conf").exists():
        print(f"minislurm env: error: no cluster in {folder} (run `minislurm cluster up` first)", file=sys.stderr)
        return 1
    print(f"export SLURM_CONF={shlex.quote(str(folder / 'slurm.conf'))}")
    print(f"export PATH={shlex.quote(str(folder / 'bin'))}:\"$PATH\"")
    return 0


def write_docker_shims(cluster) -> Path:
    """``bin/sbatch``, ... in the docker cluster's folder: each runs its command on the login
    node as the lab user, in the folder of /home matching this shell's (else the user's home)."""
    from minislurm.cluster.base import COMMANDS
    folder = cluster.dir / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    home = shlex.quote(str(cluster.home))
    run = shlex.join(cluster.exec_argv("COMMAND", cwd="/WD")[3:]).replace("/WD", '"$wd"')
    for name in COMMANDS:
        (folder / name).write_text(
            f"#!/bin/sh\n# {name} on the login node of the docker cluster {cluster.project} (minislurm env --docker)\n"
            f"home={home}\n"
            f'case $PWD in "$home") wd=/home ;; "$home"/*) wd="/home/${{PWD#"$home"/}}" ;; *) wd=/home/{cluster.user} ;; '
            f"esac\n"
            f"if [ -t 0 ] && [ -t 1 ]; then t=-t; else t=; fi\n"
            f"exec docker exec -i $t {run.replace('COMMAND', name)} \"$@\"\n")
        (folder / name).chmod(0o755)
    return folder


def docker_env(folder: str | None) -> int:
    from minislurm.cluster.docker import DEFAULT_DIR as DOCKER_DIR, DockerCluster
    from minislurm.cluster.engine import EngineError
    folder = Path(folder or DOCKER_DIR).absolute()
    if not DockerCluster.recorded(folder):
        print(f"minislurm env: error: no docker cluster in {folder} (run `minislurm cluster up --docker` first)",
              file=sys.stderr)
        return 1
    try:
        bin_dir = write_docker_shims(DockerCluster.from_dir(folder))
    except EngineError as exc:
        print(f"minislurm env: error: {exc}", file=sys.stderr)
        return 1
    print(f"export PATH={shlex.quote(str(bin_dir))}:\"$PATH\"")
    return 0
