"""One docker cluster's objects on this host: its compose project's name, made from its folder,
and the containers, networks and volumes that carry that project's label.  Finding them by
label lets ``cluster down`` remove a half-started cluster that compose no longer knows."""

from __future__ import annotations

import hashlib
from pathlib import Path

from minislurm.cluster import engine

LABEL = "com.docker.compose.project"


def project_name(folder: Path) -> str:
    """``msd-<hash of the folder>``: two clusters on one host never share a name."""
    return "msd-" + hashlib.sha1(str(Path(folder).absolute()).encode()).hexdigest()[:8]


def exists(project: str) -> bool:
    """Whether Docker holds anything of the project (containers or volumes)."""
    label = f"label={LABEL}={project}"
    return bool(engine.docker("ps", "-aq", "--filter", label, check=False).stdout.strip()
                or engine.docker("volume", "ls", "-q", "--filter", label, check=False).stdout.strip())


def running(project: str) -> list[str]:
    """The names of the project's containers that run now."""
    r = engine.docker("ps", "-q", "--filter", f"label={LABEL}={project}", "--format", "{{.Names}}", check=False)
    return r.stdout.split()


def remove(project: str) -> None:
    """Remove every container, network and volume of the project."""
    label = f"label={LABEL}={project}"
    for kind, listing in (("container", ["ps", "-aq"]), ("network", ["network", "ls", "-q"]),
                          ("volume", ["volume", "ls", "-q"])):
        ids = engine.docker(*listing, "--filter", label, check=False).stdout.split()
        if ids:
            engine.docker(kind, "rm", *(["-f"] if kind != "network" else []), *ids, check=False)
