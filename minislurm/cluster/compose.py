"""The compose files of a docker cluster: a controller, N GPU nodes, a login node (and a hub).

One image (docker/minislurm) plays every role.  Each node is a service of its own, because a
node needs a host name of its own (``srun hostname`` prints it; the DDP ranks find each other
by it) and plain compose cannot give the replicas of one service different host names.  So
the file is rendered for a number of nodes: ``docker/compose.yaml`` is the rendering for the
default 4 nodes (a test keeps it equal to what :func:`compose_yaml` writes), and ``minislurm
cluster up --docker --nodes N`` writes its own into its folder.  What every node declares
(CPUs, memory, GPUs) and the image come from ``.env``, read by the controller when it first
writes slurm.conf.  With a hub port (``--hub``) a ``hub`` service runs JupyterHub
(:mod:`minislurm.cluster.hub`) in the same image, its state on a volume of its own.

``compose.gpu.yaml`` is an override that hands each node container its own NVIDIA GPUs
(device reservations with device ids, Docker's documented way) and makes the agent register
what ``nvidia-smi`` lists instead of the configured count.

The text is written for both Debian's ``docker-compose`` 1.29 and ``docker compose`` (v2), and
deploys unchanged as a Swarm stack (``container_name`` and ``depends_on`` are then ignored:
every role waits for what it needs by itself).  Run ``python -m minislurm.cluster.compose`` to
rewrite the files in docker/.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from minislurm.cluster.confgen import node_names
from minislurm.core.hostlist import compress

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
IMAGE = "minislurm-cluster:latest"
CTLD_PORT = 6817  # slurmctld's port, inside the cluster's network only
SLURMD_PORT = 6818


@dataclass
class Shape:
    """What ``.env`` says about every node, and the cluster around them."""
    nodes: int = 4
    gpus_per_node: int = 8
    cpus_per_node: int = 32
    mem: int = 256_000  # MB, slurm.conf's RealMemory
    project: str = "minislurm-cluster"
    image: str = IMAGE
    lab_user: str = "student"
    lab_uid: int = 1000
    slurmd_timeout: int = 5
    settings: str = ""  # more slurm.conf settings: "kill_wait=1,requeue_delay=1"
    jupyter_port: int | None = None  # JupyterLab on the login node, published on 127.0.0.1
    hub_port: int | None = None  # JupyterHub (container ``hub``), published on 127.0.0.1
    gpus_from: str = "config"  # or "nvidia-smi": what the node container sees (compose.gpu.yaml sets it)

    @property
    def names(self) -> list[str]:
        return node_names(self.nodes)


HEADER = """\
# minislurm as containers: a controller (ctld), {n} GPU nodes ({hostlist}) and a login node,
# on one network, with a shared /home.  Written by minislurm/cluster/compose.py{why}; every
# node's CPUs, memory and GPUs come from .env.  Start it with `minislurm cluster up --docker`,
# or here with `docker compose up -d` (or Debian's `docker-compose up -d`), after building the
# image (`make cluster-image`).  docker/README.md says more.
"""

COMMON = """\
x-node: &role
  image: ${{MINISLURM_IMAGE:-{image}}}
  networks: [cluster]
  stop_grace_period: 10s
  deploy:
    endpoint_mode: dnsrr  # Swarm: a name is its container's address, not a virtual one (any port works)
  environment: &env
    NODE_NAMES: "{hostlist}"
    GPUS_PER_NODE: ${{GPUS_PER_NODE:-8}}
    CPUS_PER_NODE: ${{CPUS_PER_NODE:-32}}
    MEM_PER_NODE: ${{MEM_PER_NODE:-256000}}
    SLURMD_TIMEOUT: ${{SLURMD_TIMEOUT:-5}}
    SLURM_SETTINGS: ${{SLURM_SETTINGS:-}}
    LAB_USER: ${{LAB_USER:-student}}
    LAB_UID: ${{LAB_UID:-1000}}
    GPUS_FROM: ${{GPUS_FROM:-config}}
"""

VOLUMES = {  # role -> its volumes (the etc volume holds slurm.conf, the key and the tokens)
    "controller": ["etc:/etc/slurm", "users:/var/lib/extrausers", "state:/var/spool/slurmctld",
                   "${HOME_VOLUME:-home}:/home"],
    "node": ["etc:/etc/slurm:ro", "users:/var/lib/extrausers:ro", "${HOME_VOLUME:-home}:/home"],
    "login": ["etc:/etc/slurm:ro", "users:/var/lib/extrausers:ro", "${HOME_VOLUME:-home}:/home"],
    "hub": ["etc:/etc/slurm:ro", "users:/var/lib/extrausers:ro", "${HOME_VOLUME:-home}:/home",
            "hub:/srv/jupyterhub"],
}
HUB_PORT = 8000  # JupyterHub's, in its container


def _service(name: str, role: str, check: str, extra: list[str] = ()) -> str:
    lines = [f"  {name}:", "    <<: *role", f"    container_name: ${{COMPOSE_PROJECT_NAME:-minislurm}}-{name}",
             f"    hostname: {name}", f"    command: [{role}]", "    volumes:"]
    lines += [f"      - {v}" for v in VOLUMES[role]]
    lines += ["    healthcheck:", f'      test: ["CMD", "bash", "-c", "{check}"]',
              "      interval: 10s", "      timeout: 3s", "      retries: 3", "      start_period: 60s"]
    return "\n".join([*lines, *extra]) + "\n"


def compose_yaml(shape: Shape, why: str = "") -> str:
    """The whole cluster: ctld, the nodes, login; their network and volumes."""
    names = shape.names
    hostlist = compress(names)
    out = [HEADER.format(n=len(names), hostlist=hostlist, why=why),
           COMMON.format(image=IMAGE, hostlist=hostlist), "services:"]
    out.append(_service("ctld", "controller", f"</dev/tcp/ctld/{CTLD_PORT}"))
    wait = ["    depends_on: [ctld]"]
    for name in names:
        out.append(_service(name, "node", f"</dev/tcp/127.0.0.1/{SLURMD_PORT}", wait))
    extra = list(wait)
    if shape.jupyter_port:
        extra += ["    environment:", "      <<: *env", "      JUPYTER: \"1\"",
                  "    ports:", '      - "127.0.0.1:${JUPYTER_PORT}:8888"']
    out.append(_service("login", "login", "test -r /etc/slurm/slurm.conf", extra))
    if shape.hub_port:
        out.append(_service("hub", "hub", f"</dev/tcp/127.0.0.1/{HUB_PORT}",
                            [*wait, "    ports:", f'      - "127.0.0.1:${{HUB_PORT}}:{HUB_PORT}"']))
    volumes = ["etc", "users", "state", "home", *(["hub"] if shape.hub_port else [])]
    out.append("networks:\n  cluster: {}\n\nvolumes:\n" + "".join(f"  {v}: {{}}\n" for v in volumes))
    return "\n".join(out)


def gpu_override(shape: Shape, why: str = "") -> str:
    """Each node container gets GPUs ``[i*G, (i+1)*G)`` of the host, and its agent registers
    what ``nvidia-smi`` lists in the container (fewer than configured: the node drains)."""
    lines = [f"# GPU mode: each node container gets its own {shape.gpus_per_node} NVIDIA GPUs of the host "
             f"(device ids below),",
             f"# and its agent registers what nvidia-smi lists.  Written by minislurm/cluster/compose.py{why}.",
             "# Needs NVIDIA's driver and container toolkit on the host:",
             "#   docker compose -f compose.yaml -f compose.gpu.yaml up -d", "services:"]
    for i, name in enumerate(shape.names):
        ids = ", ".join(f'"{g}"' for g in range(i * shape.gpus_per_node, (i + 1) * shape.gpus_per_node))
        lines += [f"  {name}:", "    environment:", "      GPUS_FROM: nvidia-smi",
                  "      NVIDIA_DRIVER_CAPABILITIES: compute,utility", "    deploy:", "      resources:",
                  "        reservations:", "          devices:", "            - driver: nvidia",
                  f"              device_ids: [{ids}]", "              capabilities: [gpu]"]
    return "\n".join(lines) + "\n"


def env_file(shape: Shape, home_volume: str = "home") -> str:
    """``.env``: what compose substitutes in compose.yaml (and in the GPU override)."""
    lines = [
        "# The docker cluster's settings, read by compose.yaml (docker compose reads .env beside it).",
        "# Every node declares these CPUs, memory (MB) and GPUs, as slurm.conf's CPUs, RealMemory and",
        "# Gres; the containers are not limited to them.  The controller writes slurm.conf from them",
        "# when it first starts (remove the volumes, `docker compose down -v`, to change them).",
        f"COMPOSE_PROJECT_NAME={shape.project}",
        f"MINISLURM_IMAGE={shape.image}",
        f"GPUS_PER_NODE={shape.gpus_per_node}",
        f"CPUS_PER_NODE={shape.cpus_per_node}",
        f"MEM_PER_NODE={shape.mem}",
        f"SLURMD_TIMEOUT={shape.slurmd_timeout}",
        "# More slurm.conf settings, as name=value,... (e.g. kill_wait=1,requeue_delay=1)",
        f"SLURM_SETTINGS={shape.settings}",
        "# The lab user every container knows (more: `minislurm cluster add-users`)",
        f"LAB_USER={shape.lab_user}",
        f"LAB_UID={shape.lab_uid}",
        "# GPUs each agent registers: config (counted, GPUS_PER_NODE) or nvidia-smi (what its container",
        "# sees; fewer than GPUS_PER_NODE drains the node).  compose.gpu.yaml sets nvidia-smi.",
        f"GPUS_FROM={shape.gpus_from}",
        "# /home: a named volume, or a folder of this host",
        f"HOME_VOLUME={home_volume}",
    ]
    if shape.jupyter_port:
        lines.append(f"JUPYTER_PORT={shape.jupyter_port}")
    if shape.hub_port:
        lines.append(f"HUB_PORT={shape.hub_port}")
    return "\n".join(lines) + "\n"


def write(folder: Path, shape: Shape, *, gpu: bool = False, home_volume: str = "home", why: str = "") -> list[Path]:
    """compose.yaml, .env and (with ``gpu``) compose.gpu.yaml in ``folder``; the files to pass
    to compose, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "compose.yaml").write_text(compose_yaml(shape, why))
    (folder / ".env").write_text(env_file(shape, home_volume))
    files = [folder / "compose.yaml"]
    if gpu:
        (folder / "compose.gpu.yaml").write_text(gpu_override(shape, why))
        files.append(folder / "compose.gpu.yaml")
    return files


def read(folder: Path) -> dict:
    """What :func:`write` put in ``folder``, as the keyword arguments of ``DockerCluster``."""
    from minislurm.core.hostlist import expand
    env = dict(line.split("=", 1) for line in (folder / ".env").read_text().splitlines()
               if "=" in line and not line.startswith("#"))
    names = expand(re.search(r'NODE_NAMES: "([^"]+)"', (folder / "compose.yaml").read_text()).group(1))
    settings = dict(kv.split("=", 1) for kv in env.get("SLURM_SETTINGS", "").split(",") if "=" in kv)
    return {"nodes": len(names), "gpus_per_node": int(env["GPUS_PER_NODE"]), "cpus_per_node": int(env["CPUS_PER_NODE"]),
            "mem": int(env["MEM_PER_NODE"]), "gpu": (folder / "compose.gpu.yaml").exists(),
            "image": env["MINISLURM_IMAGE"], "user": env["LAB_USER"], "uid": int(env["LAB_UID"]),
            "slurmd_timeout": int(env["SLURMD_TIMEOUT"]),
            "jupyter_port": int(env["JUPYTER_PORT"]) if env.get("JUPYTER_PORT") else None,
            "hub_port": int(env["HUB_PORT"]) if env.get("HUB_PORT") else None,
            "gpus_from": env.get("GPUS_FROM", "config"), **settings}


def main(argv: list[str]) -> int:
    """Rewrite docker/compose.yaml, docker/compose.gpu.yaml and docker/.env (the defaults)."""
    shape = Shape()
    why = " (python -m minislurm.cluster.compose)"
    (DOCKER_DIR / "compose.yaml").write_text(compose_yaml(shape, why))
    (DOCKER_DIR / "compose.gpu.yaml").write_text(gpu_override(shape, why))
    (DOCKER_DIR / ".env").write_text(env_file(shape))
    print(f"wrote {DOCKER_DIR}/compose.yaml, compose.gpu.yaml and .env")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
