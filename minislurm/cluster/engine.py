"""The Docker engine and compose, checked before a docker cluster starts.

Each missing piece is refused at once, in one line that says what to do, before anything is
created: no ``docker`` command, not root, no engine answering, no compose (or one too old to
read the compose specification), no image and no debootstrap to build its base, a port in
use, GPUs asked for that the host does not have.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "minislurm" / "build.sh"
BASE = "minislurm-base:bookworm"
MIN_COMPOSE_V1 = (1, 27)  # the first docker-compose that reads files without a version key


class EngineError(RuntimeError):
    """What stops a docker cluster from starting, in one line."""


def docker(*args: str, check: bool = True, timeout: float = 120, input: str | None = None,
           capture: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["docker", *args], capture_output=capture, text=True, timeout=timeout, input=input)
    if check and r.returncode:
        what = (r.stderr or r.stdout or "").strip().splitlines()
        raise EngineError(f"docker {args[0]} failed: {what[-1] if what else f'exit {r.returncode}'}")
    return r


def check_engine() -> None:
    if shutil.which("docker") is None:
        raise EngineError("no docker command: install a Docker engine (Debian: apt-get install docker.io "
                          "docker-compose), then start it (dockerd &, or systemctl start docker)")
    if os.geteuid() != 0:
        raise EngineError("a docker cluster needs root (it manages containers, volumes and the cluster's "
                          "users): run it with sudo")
    try:
        r = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                           timeout=30)
    except subprocess.TimeoutExpired:
        r = None
    if r is None or r.returncode or not r.stdout.strip():
        raise EngineError("no Docker engine answers (docker info failed): start it (dockerd &, or "
                          "systemctl start docker)")


def compose_version(text: str) -> tuple[int, ...] | None:
    m = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def compose_command() -> list[str]:
    """``docker compose`` (v2) if the plugin is there, else Debian's ``docker-compose`` (1.27+)."""
    candidates = []
    v2 = subprocess.run(["docker", "compose", "version", "--short"], capture_output=True, text=True, timeout=30)
    if v2.returncode == 0:
        candidates.append((["docker", "compose"], v2.stdout))
    if shutil.which("docker-compose"):
        v1 = subprocess.run(["docker-compose", "version", "--short"], capture_output=True, text=True, timeout=30)
        candidates.append((["docker-compose"], v1.stdout if v1.returncode == 0 else ""))
    if not candidates:
        raise EngineError("no docker compose: install Debian's docker-compose (apt-get install docker-compose) "
                          "or the docker compose plugin")
    for command, text in candidates:
        version = compose_version(text)
        if version and (version[0] >= 2 or version[:2] >= MIN_COMPOSE_V1):
            return command
    command, text = candidates[0]
    raise EngineError(f"unknown compose version {text.strip() or '(none printed)'!r} from {' '.join(command)}: "
                      f"minislurm needs docker compose v2 or docker-compose 1.27 or newer")


# What the images hold of the project, and the cluster image's recipe and pins, hashed.
SOURCES = ("minislurm", "examples", "labs", "data", "docker/minislurm")
LABEL = "minislurm.source"
GRADER_BUILD_SCRIPT = BUILD_SCRIPT.parents[1] / "grader" / "build.sh"
MAKE_TARGET = {BUILD_SCRIPT: "make cluster-image", GRADER_BUILD_SCRIPT: "make grader-image"}


def source_hash(root: Path) -> str:
    """A digest of the project's files the images are built from (build.sh labels an image with
    it), so a cluster never starts, and a notebook is never graded, on an image older than the
    code here."""
    digest = hashlib.sha256()
    for top in SOURCES:
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and ".ipynb_checkpoints" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def image_exists(image: str) -> bool:
    return docker("image", "inspect", image, check=False).returncode == 0


def image_is_current(image: str, build_script: Path = BUILD_SCRIPT) -> bool:
    """The image exists and holds these sources (an image built elsewhere, without the
    project's tree here to compare, counts as current)."""
    r = docker("image", "inspect", "-f", f'{{{{index .Config.Labels "{LABEL}"}}}}', image, check=False)
    if r.returncode:
        return False
    return not build_script.exists() or r.stdout.strip() == source_hash(build_script.parents[2])


def ensure_image(image: str, *, build_script: Path = BUILD_SCRIPT, quiet: bool = True) -> bool:
    """Build ``image`` with ``build_script`` (the cluster's or the grader's) when it is missing or
    older than the sources (Docker's cache makes that a matter of seconds); True if it was built."""
    if image_is_current(image, build_script):
        return False
    make = MAKE_TARGET.get(build_script, f"sh {build_script}")
    if not build_script.exists():
        raise EngineError(f"no image {image}, and no {build_script.relative_to(build_script.parents[2])} here "
                          f"to build it (build it from a copy of the project: {make})")
    if not image_exists(BASE) and shutil.which("debootstrap") is None:
        raise EngineError(f"no image {image} and no base image {BASE}: building it needs debootstrap "
                          f"(apt-get install debootstrap)")
    why = "minislurm changed since it was built" if image_exists(image) else "a few minutes, once"
    print(f"minislurm: building the image {image} ({why})", file=sys.stderr, flush=True)
    env = {**os.environ, "IMAGE": image, "PY": sys.executable}
    out = subprocess.DEVNULL if quiet else None
    r = subprocess.run(["sh", str(build_script), "-q"], env=env, stdout=out, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise EngineError(f"building {image} failed: {last} (try {make})")
    return True


def host_gpus() -> int:
    """NVIDIA GPUs on this host (``nvidia-smi -L``); 0 without a driver."""
    from minislurm.slurmd.gpus import detect_nvidia
    return detect_nvidia()


def check_gpus(wanted: int) -> None:
    """GPU mode: the host must have ``wanted`` GPUs and Docker a way to hand them over."""
    have = host_gpus()
    if have < wanted:
        raise EngineError(f"GPU mode needs {wanted} NVIDIA GPUs (nodes x GPUs per node) and this host has "
                          f"{have} (nvidia-smi -L): ask for fewer, or leave out --gpu for counted GPUs")
    runtimes = docker("info", "--format", "{{json .Runtimes}}", check=False).stdout
    if "nvidia" not in runtimes:
        raise EngineError("GPU mode needs NVIDIA's container toolkit in Docker (no nvidia runtime in docker "
                          "info): install nvidia-container-toolkit and run nvidia-ctk runtime configure")


def check_port(port: int) -> None:
    with socket.socket() as s:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
        except OSError:
            raise EngineError(f"port {port} is in use on this host: choose another (--jupyter-port)") from None


if __name__ == "__main__":  # build.sh: python engine.py --source-hash ROOT
    if sys.argv[1:2] == ["--source-hash"] and len(sys.argv) == 3:
        print(source_hash(Path(sys.argv[2])))
    else:
        sys.exit("usage: engine.py --source-hash ROOT")
