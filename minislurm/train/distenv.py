"""From Slurm's task variables to what ``torch.distributed`` reads (``init_method="env://"``).

The mapping is the one the common launchers use (reference section 2.3):

=================  ==========================================  =======================
torch              Slurm                                       also used by
=================  ==========================================  =======================
RANK               SLURM_PROCID                                Lightning, submitit, idr_torch
WORLD_SIZE         SLURM_NTASKS (SLURM_STEP_NUM_TASKS)         Lightning, submitit, idr_torch
LOCAL_RANK         SLURM_LOCALID                               Lightning, submitit, idr_torch
LOCAL_WORLD_SIZE   SLURM_STEP_TASKS_PER_NODE, before any "("   idr_torch
GROUP_RANK         SLURM_NODEID                                Lightning (node_rank)
MASTER_ADDR        first host of SLURM_JOB_NODELIST            Lightning, submitit, idr_torch
MASTER_PORT        derived from SLURM_JOB_ID                   (each launcher has its own rule)
=================  ==========================================  =======================

The same in plain shell, for a batch script::

    export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
    export MASTER_PORT=$((15000 + (SLURM_JOB_ID + 7919 * SLURM_RESTART_COUNT) % 20000))
    srun bash -c 'RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS python train.py'

The port follows the job id so two jobs on one node do not collide (the classic
``MASTER_PORT`` clash when every script hard-codes 29500), and the restart count, so a requeued
run does not collide with a stale run of itself.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

from minislurm.core.hostlist import first

PORT_BASE, PORT_SPAN = 15000, 20000


@dataclass(frozen=True)
class DistEnv:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    master_addr: str
    master_port: int
    job_id: int
    restart_count: int

    def export(self, environ: MutableMapping[str, str] | None = None) -> None:
        """Write the torch variables into ``environ`` (``os.environ`` by default)."""
        env = os.environ if environ is None else environ
        env.update(RANK=str(self.rank), WORLD_SIZE=str(self.world_size), LOCAL_RANK=str(self.local_rank),
                   LOCAL_WORLD_SIZE=str(self.local_world_size), GROUP_RANK=str(self.node_rank),
                   MASTER_ADDR=self.master_addr, MASTER_PORT=str(self.master_port))


def _counts(text: str) -> list[int]:
    """``4,3(x2)`` -> ``[4, 3, 3]``."""
    out: list[int] = []
    for part in text.split(","):
        count, _, rep = part.partition("(x")
        out += [int(count)] * (int(rep.rstrip(")")) if rep else 1)
    return out


def port_for(job_id: int, restart_count: int = 0) -> int:
    """15000 + job id, shifted by the restart count: a requeued run may start while a stale
    run of the same job still holds the old port (a node cut off, or one machine)."""
    return PORT_BASE + (job_id + 7919 * restart_count) % PORT_SPAN


def resolve(host: str) -> str:
    """The address of ``host``; a lab cluster's node names may not be in DNS, so fall back to
    the address the controller knows (``scontrol show node``), then to the loopback."""
    try:
        return socket.gethostbyname(host)
    except OSError:
        pass
    try:
        from minislurm.client import Client
        for node in Client().call("GET", "/nodes")["nodes"]:
            if node["name"] == host and node.get("addr"):
                return node["addr"]
    except Exception:  # noqa: BLE001 - no controller reachable: a single machine
        pass
    return "127.0.0.1"


def from_slurm(environ: Mapping[str, str] | None = None, *, resolve_host=resolve) -> DistEnv:
    """The distributed setup of this task, read from Slurm's variables (an explicit
    MASTER_ADDR/MASTER_PORT in the environment wins, as in Lightning and submitit)."""
    env = os.environ if environ is None else environ
    if "SLURM_PROCID" not in env:
        raise RuntimeError("not a Slurm task: SLURM_PROCID is not set (start it with srun)")
    job_id = int(env.get("SLURM_JOB_ID", "0"))
    world = int(env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS") or "1")
    per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or str(world)
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or "localhost"
    master = env.get("MASTER_ADDR") or resolve_host(first(nodelist))
    node = int(env.get("SLURM_NODEID", "0"))
    restarts = int(env.get("SLURM_RESTART_COUNT", "0"))
    return DistEnv(
        rank=int(env["SLURM_PROCID"]), world_size=world, local_rank=int(env.get("SLURM_LOCALID", "0")),
        local_world_size=_counts(per_node)[min(node, len(_counts(per_node)) - 1)], node_rank=node,
        master_addr=master, master_port=int(env.get("MASTER_PORT") or port_for(job_id, restarts)), job_id=job_id,
        restart_count=restarts,
    )


def from_torch(environ: Mapping[str, str] | None = None) -> DistEnv:
    """The same record from torchrun-style variables (RANK, WORLD_SIZE, ...), for processes
    started without Slurm, e.g. by hand to compare."""
    env = os.environ if environ is None else environ
    world = int(env["WORLD_SIZE"])
    return DistEnv(rank=int(env["RANK"]), world_size=world, local_rank=int(env.get("LOCAL_RANK", "0")),
                   local_world_size=int(env.get("LOCAL_WORLD_SIZE", str(world))),
                   node_rank=int(env.get("GROUP_RANK", "0")), master_addr=env.get("MASTER_ADDR", "127.0.0.1"),
                   master_port=int(env.get("MASTER_PORT", "29500")), job_id=0, restart_count=0)


def from_environment(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Slurm's variables when started by srun, torchrun's otherwise."""
    env = os.environ if environ is None else environ
    return from_slurm(env) if "SLURM_PROCID" in env else from_torch(env)
