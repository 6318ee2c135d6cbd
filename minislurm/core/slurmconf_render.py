"""Write a :class:`ClusterConfig` back as slurm.conf text that real Slurm 22.05 accepts.

Kept apart from the parser so each stays small.  Defaults are left out, so the text shows what a
lesson changed; identical consecutive nodes share one ``NodeName`` line (a hostlist), node order
is kept because it is the order Slurm fills nodes in, and keys minislurm only carries
(``ClusterConfig.other``) are written as they were read.  ``parse_slurm_conf(render(cfg))``
gives ``cfg`` back, warnings aside.
"""

from __future__ import annotations

import math

from .cluster import ClusterConfig, NodeConfig, PartitionConfig, PriorityConfig, SchedulerConfig
from .hostlist import compress

POLICIES = {"sched/backfill": "conservative", "sched/builtin": "fifo"}


def slurm_time(seconds: float, infinite: str = "UNLIMITED") -> str:
    """Seconds as ``[D-]HH:MM:00`` (Slurm's resolution is a minute)."""
    if seconds == math.inf:
        return infinite
    days, rest = divmod(math.ceil(seconds / 60), 1440)
    hours, minutes = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:00" if days else f"{hours:02d}:{minutes:02d}:00"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _gres(node: NodeConfig) -> str:
    items = [f"gpu:{node.gpu_type}:{node.gpus}" if node.gpu_type else f"gpu:{node.gpus}"] \
        if node.gpus else []
    return ",".join(items + [f"{name}:{count}" for name, count in node.gres.items()])


def _node_line(run: list[NodeConfig]) -> str:
    node = run[0]
    words = [f"NodeName={compress([n.name for n in run], sort=False)}", f"CPUs={node.cpus}",
             f"RealMemory={node.real_memory}"]
    if _gres(node):
        words.append(f"Gres={_gres(node)}")
    if node.weight != 1:
        words.append(f"Weight={node.weight}")
    if node.features:
        words.append(f"Features={','.join(node.features)}")
    return " ".join(words + [f"State={node.state}"])


def _alike(a: NodeConfig, b: NodeConfig) -> bool:
    """Same line in slurm.conf: everything but the name (gpu_files live in gres.conf)."""
    keep = lambda n: (n.cpus, n.real_memory, n.gpus, n.gpu_type, n.gres, n.weight,  # noqa: E731
                      n.features, n.state)
    return keep(a) == keep(b)


def _partition_line(part: PartitionConfig, all_nodes: list[str]) -> str:
    words = [f"PartitionName={part.name}"]
    if part.nodes:
        words.append("Nodes=" + ("ALL" if part.nodes == all_nodes
                                 else compress(part.nodes, sort=False)))
    words += [f"Default={'YES' if part.default else 'NO'}", f"MaxTime={slurm_time(part.max_time)}"]
    if part.default_time is not None:
        words.append(f"DefaultTime={slurm_time(part.default_time)}")
    if part.max_nodes != math.inf:
        words.append(f"MaxNodes={_num(part.max_nodes)}")
    words.append(f"State={part.state}")
    if part.priority_tier != 1:
        words.append(f"PriorityTier={part.priority_tier}")
    if part.priority_job_factor != 1:
        words.append(f"PriorityJobFactor={part.priority_job_factor}")
    if part.exclusive:
        words.append("OverSubscribe=EXCLUSIVE")
    if part.allow_accounts is not None:
        words.append("AllowAccounts=" + ",".join(part.allow_accounts))
    if part.allow_groups is not None:
        words.append("AllowGroups=" + ",".join(part.allow_groups))
    return " ".join(words)


def _scheduler(sched: SchedulerConfig, kept: str | None) -> list[str]:
    default = SchedulerConfig()
    lines = [f"SchedulerType={sched.scheduler_type}"]
    if sched.policy != POLICIES.get(sched.scheduler_type):
        lines.append(f"#minislurm: BackfillPolicy={sched.policy}")
    params = [f"{name}={_num(getattr(sched, name) / (60 if name == 'bf_window' else 1))}"
              for name in ("bf_interval", "bf_window", "bf_resolution", "bf_max_job_test",
                           "requeue_delay", "max_script_size")
              if getattr(sched, name) != getattr(default, name)]
    params += [kept] if kept else []
    if params:
        lines.append("SchedulerParameters=" + ",".join(params))
    return lines


def _priority(prio: PriorityConfig) -> list[str]:
    default = PriorityConfig()
    lines = [f"PriorityType={prio.type}"]
    for name in ("Age", "Fairshare", "JobSize", "Partition", "QOS", "Assoc"):
        weight = getattr(prio, f"weight_{name.lower()}")
        if weight != getattr(default, f"weight_{name.lower()}"):
            lines.append(f"PriorityWeight{name}={weight}")
    for key, attr in (("PriorityDecayHalfLife", "decay_half_life"), ("PriorityMaxAge", "max_age"),
                      ("PriorityCalcPeriod", "calc_period")):
        if getattr(prio, attr) != getattr(default, attr):
            # A half-life of 0 is Slurm's "no decay", which minislurm holds as infinite.
            lines.append(f"{key}={slurm_time(getattr(prio, attr), '0')}")
    if prio.favor_small:
        lines.append("PriorityFavorSmall=YES")
    if prio.flags:
        lines.append("PriorityFlags=" + ",".join(sorted(prio.flags)))
    return lines


def render_slurm_conf(cfg: ClusterConfig) -> str:
    """slurm.conf text for ``cfg``; pair it with :func:`gresconf.render_gres_conf` for devices."""
    lines = ["# slurm.conf written by minislurm", f"ClusterName={cfg.cluster_name}"]
    for key, value in cfg.other.items():
        if key != "SchedulerParameters":
            lines += [f'{key}="{v}"' if any(c.isspace() for c in v) else f"{key}={v}"
                      for v in value.split("\n")]
    if cfg.gres_types:
        lines.append("GresTypes=" + ",".join(sorted(cfg.gres_types)))
    lines += _scheduler(cfg.sched, cfg.other.get("SchedulerParameters"))
    lines += _priority(cfg.priority)
    lines += [f"SlurmdTimeout={_num(cfg.slurmd_timeout)}",
              f"ReturnToService={cfg.return_to_service}",
              f"JobRequeue={int(cfg.job_requeue)}", f"KillWait={_num(cfg.kill_wait)}",
              f"InactiveLimit={_num(cfg.inactive_limit)}",
              f"StateSaveLocation={cfg.state_save_location}"]
    if cfg.accounting_enforce:
        lines.append("AccountingStorageEnforce=" + ",".join(sorted(cfg.accounting_enforce)))
    if cfg.first_job_id != 1:
        lines.append(f"FirstJobId={cfg.first_job_id}")
    if cfg.def_mem_per_cpu is not None:
        lines.append(f"DefMemPerCPU={cfg.def_mem_per_cpu}")
    if cfg.def_mem_per_node is not None:
        lines.append(f"DefMemPerNode={cfg.def_mem_per_node}")
    run: list[NodeConfig] = []
    for node in cfg.nodes:
        if run and not _alike(run[0], node):
            lines.append(_node_line(run))
            run = []
        run.append(node)
    if run:
        lines.append(_node_line(run))
    names = [n.name for n in cfg.nodes]
    lines += [_partition_line(part, names) for part in cfg.partitions]
    return "\n".join(lines) + "\n"
