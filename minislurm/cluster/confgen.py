"""The slurm.conf a local lab cluster starts with, from a few flags.

Defaults favour short feedback loops for learners: backfill every second, nodes declared
DOWN after 5 silent seconds, a requeued job eligible again after 2 s, KillWait 5 s, and an
srun allocation whose srun has gone (InactiveLimit) ended after a minute.
``scontrol show config`` prints them.
"""

from __future__ import annotations

import socket

from minislurm.core.cluster import ClusterConfig, NodeConfig, PartitionConfig, PriorityConfig, SchedulerConfig
from minislurm.core.slurmconf import render_slurm_conf


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def node_names(nodes: int, prefix: str = "gpu") -> list[str]:
    """``gpu01``, ``gpu02``, ...: the lab cluster's node names (wider past 99 nodes)."""
    width = max(2, len(str(nodes)))
    return [f"{prefix}{i:0{width}d}" for i in range(1, nodes + 1)]


def lab_config(nodes: int = 4, gpus_per_node: int = 8, cpus_per_node: int = 32, mem: int = 256_000,
               prefix: str = "gpu", partition: str = "gpu", policy: str = "conservative") -> ClusterConfig:
    names = node_names(nodes, prefix)
    return ClusterConfig(
        cluster_name="minislurm",
        nodes=[NodeConfig(n, cpus=cpus_per_node, real_memory=mem, gpus=gpus_per_node, state="UNKNOWN")
               for n in names],
        partitions=[PartitionConfig(partition, nodes=names, default=True)],
        gres_types={"gpu"},
        sched=SchedulerConfig(policy=policy, bf_interval=1, bf_resolution=5, requeue_delay=2),
        priority=PriorityConfig(weight_age=1000, weight_fairshare=10000, weight_jobsize=1000,
                                weight_partition=1000, max_age=86400, decay_half_life=86400, calc_period=60),
        slurmd_timeout=5, return_to_service=1, kill_wait=5, inactive_limit=60,
        def_mem_per_cpu=max(1, mem // max(1, cpus_per_node)),
    )


def apply_settings(cfg: ClusterConfig, settings: dict) -> None:
    """Set ``slurmd_timeout=3``, ``kill_wait=1``, ``bf_interval=2``, ...: a ClusterConfig field,
    or one of its scheduler's."""
    for key, value in settings.items():
        target = cfg.sched if hasattr(cfg.sched, key) else cfg
        if not hasattr(target, key):
            raise ValueError(f"unknown cluster setting {key!r}")
        setattr(target, key, value)


def write_conf(cfg: ClusterConfig, *, host: str, addr: str | None, port: int, key_file: str, state_dir: str) -> str:
    """slurm.conf text with the controller's address (``None``: its host name resolves), the
    JWT key and the state directory."""
    cfg.other = {k: v for k, v in cfg.other.items()
                 if k.lower() not in ("slurmctldhost", "slurmctldport", "authalttypes", "authaltparameters")}
    where = f"{host}({addr})" if addr else host
    cfg.other = {"SlurmctldHost": where, "SlurmctldPort": str(port), "AuthAltTypes": "auth/jwt",
                 "AuthAltParameters": f"jwt_key={key_file}", **cfg.other}
    cfg.state_save_location = state_dir
    return render_slurm_conf(cfg)
