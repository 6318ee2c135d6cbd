"""scontrol's ``show node|partition|reservation|hostnames|hostlist`` output, in the record
layout of :mod:`minislurm.cli.fmt.scontrol`."""

from __future__ import annotations

import time

from minislurm.cli.fmt.fields import mem_units, timestamp
from minislurm.cli.helptext import SLURM_VERSION as VERSION
from minislurm.cli.fmt.scontrol import limit_text, null, record, show_time, tres_string
from minislurm.core.hostlist import compress, expand
from minislurm.core.timefmt import format_elapsed


_NODE_BASE = {"idle": "IDLE", "mix": "MIXED", "alloc": "ALLOCATED", "down": "DOWN", "drain": "IDLE",
              "drng": "MIXED", "comp": "IDLE", "fail": "DOWN", "unk": "UNKNOWN", "resv": "IDLE", "maint": "IDLE"}


def alloc_tres(node: dict) -> str:
    """A node's allocated TRES as Slurm writes them (``cpu=4,mem=32G,gres/gpu=2``; empty if none)."""
    alloc = []
    if node.get("alloc_cpus"):
        alloc.append(f"cpu={node['alloc_cpus']}")
    if node.get("alloc_mem"):
        alloc.append(f"mem={mem_units(node['alloc_mem'])}")
    if node.get("alloc_gpus"):
        alloc.append(f"gres/gpu={len(node['alloc_gpus'])}")
    return ",".join(alloc)


def node_state_string(node: dict) -> str:
    """``IDLE``, ``MIXED+DRAIN``, ``DOWN+NOT_RESPONDING``, ... (base, then flags)."""
    state, flags = node.get("state", "unk"), node.get("flags", ())
    base = _NODE_BASE.get(state, state.upper())
    if state == "drng" and node.get("alloc_cpus", 0) >= node.get("cpus", 0) > 0:
        base = "ALLOCATED"
    extra = []
    if state == "comp":
        extra.append("COMPLETING")
    if state in ("drain", "drng") or "DRAIN" in flags:
        extra.append("DRAIN")
    if state == "fail":
        extra.append("FAIL")
    if state in ("resv", "maint"):
        extra.append("RESERVED" if state == "resv" else "MAINTENANCE+RESERVED")
    if "NOT_RESPONDING" in flags:
        extra.append("NOT_RESPONDING")
    return "+".join([base] + extra)


def show_node(node: dict) -> str:
    """``scontrol show node <name>`` for one node."""
    cpus, name = node.get("cpus", 0), node["name"]
    gpus = node.get("gpus", 0)
    cfg = tres_string(cpus, node.get("real_memory", 0), 1, gpus)
    cfg = cfg.replace(",node=1", "")  # nodes report no node= TRES
    lines = [
        f"NodeName={name} Arch={node.get('arch', 'x86_64')} CoresPerSocket={node.get('cores_per_socket', 1)} ",
        f"CPUAlloc={node.get('alloc_cpus', 0)} CPUEfctv={cpus} CPUTot={cpus} CPULoad={_load(node)}",
        "AvailableFeatures=(null)",
        "ActiveFeatures=(null)",
        f"Gres={node.get('gres') or '(null)'}",
        f"NodeAddr={node.get('addr') or name} NodeHostName={name} Version={VERSION}",
        f"OS={node.get('os', 'Linux')} ",
        f"RealMemory={node.get('real_memory', 0)} AllocMem={node.get('alloc_mem', 0)} FreeMem={_free(node)} "
        f"Sockets={node.get('sockets', cpus)} Boards=1",
        f"State={node_state_string(node)} ThreadsPerCore={node.get('threads_per_core', 1)} TmpDisk=0 "
        "Weight=1 Owner=N/A MCS_label=N/A",
    ]
    if node.get("partitions"):
        lines.append(f"Partitions={','.join(node['partitions'])} ")
    lines += [
        f"BootTime={timestamp(node.get('boot_time'), 'None')} "
        f"SlurmdStartTime={timestamp(node.get('slurmd_start_time'), 'None')}",
        f"LastBusyTime={timestamp(node.get('last_busy'), 'Unknown')}",  # 22.05 has no ResumeAfterTime
        f"CfgTRES={cfg}",
        f"AllocTRES={alloc_tres(node)}",
        "CapWatts=n/a",
        "CurrentWatts=0 AveWatts=0",
        "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",  # n/s: no ext_sensors plugin
    ]
    if node.get("reason"):
        who = ""
        if node.get("reason_time"):
            who = f" [{node.get('reason_user') or 'root'}@{timestamp(node['reason_time'])}]"
        lines.append(f"Reason={node['reason']}{who}")
    return record(lines)


def _load(node: dict) -> str:
    """CPULoad: the node's 1-minute load average, N/A before it has reported one."""
    load = node.get("cpu_load")
    return "N/A" if load is None else f"{load:.2f}"


def _free(node: dict) -> str:
    free = node.get("free_mem")
    return "N/A" if free is None else str(free)


def show_partition(part: dict, nodes: list[dict] | None = None) -> str:
    """``scontrol show partition <name>`` for one partition (``nodes`` give TRES memory)."""
    mem = part.get("total_mem")
    if mem is None and nodes is not None:
        members = set(expand(part.get("nodes") or ""))
        mem = sum(n.get("real_memory", 0) for n in nodes if n["name"] in members)
    max_nodes = part.get("max_nodes")
    default_time = part.get("default_time")
    lines = [
        f"PartitionName={part['name']}",
        f"AllowGroups={part.get('allow_groups', 'ALL')} AllowAccounts={part.get('allow_accounts', 'ALL')} "
        "AllowQos=ALL",
        f"AllocNodes=ALL Default={'YES' if part.get('default') else 'NO'} QoS=N/A",
        f"DefaultTime={'NONE' if default_time is None else format_elapsed(default_time)} DisableRootJobs=NO "
        "ExclusiveUser=NO ExclusiveTopo=NO GraceTime=0 Hidden=NO",
        f"MaxNodes={'UNLIMITED' if max_nodes is None else max_nodes} MaxTime={limit_text(part.get('max_time'))} "
        "MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED MaxCPUsPerSocket=UNLIMITED",
        f"Nodes={part.get('nodes') or '(null)'}",
        f"PriorityJobFactor={part.get('priority_job_factor', 1)} PriorityTier={part.get('priority_tier', 1)} "
        "RootOnly=NO ReqResv=NO OverSubscribe=NO",
        "OverTimeLimit=NONE PreemptMode=OFF",
        f"State={part.get('state', 'UP')} TotalCPUs={part.get('total_cpus', 0)} "
        f"TotalNodes={part.get('total_nodes', 0)} SelectTypeParameters=NONE",
        "JobDefaults=(null)",
        "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED",
        "TRES=" + tres_string(part.get("total_cpus", 0), mem or 0, part.get("total_nodes", 0),
                              part.get("total_gpus", 0)),
    ]
    return record(lines)


def show_hostnames(expr: str) -> str:
    """``scontrol show hostnames``: one host per line, in the given order."""
    return "".join(h + "\n" for h in expand(expr))


def show_hostlist(expr: str, sorted: bool = False) -> str:
    """``scontrol show hostlist`` (order and duplicates kept) or ``hostlistsorted``."""
    return compress(expand(expr), sort=sorted) + "\n"


def show_reservation(resv: dict, *, now: float | None = None) -> str:
    """``scontrol show reservation``: times, nodes, who may use it, and whether it is active."""
    start, end = resv["start"], resv.get("end")
    now = time.time() if now is None else now
    state = "ACTIVE" if start <= now and (end is None or now < end) else "INACTIVE"
    nodes = expand(resv["nodes"]) if isinstance(resv["nodes"], str) else list(resv["nodes"])
    cpus = resv.get("cpus", 0)
    from minislurm.core.reservation import FLAGS  # in the order Slurm lists them; imported here, as sinfo needs none
    flags = sorted(resv.get("flags", ()), key=lambda f: (FLAGS.index(f) if f in FLAGS else 99, f))
    lines = [
        f"ReservationName={resv['name']} StartTime={show_time(start)} "
        f"EndTime={show_time(end) if end is not None else 'Unknown'} "
        f"Duration={limit_text(None if end is None else end - start)}",
        f"Nodes={compress(nodes)} NodeCnt={len(nodes)} CoreCnt={cpus} Features=(null) "
        f"PartitionName={null(resv.get('partition') or '')} Flags={','.join(flags)}",
        f"TRES=cpu={cpus}" if cpus else "TRES=(null)",
        f"Users={null(','.join(resv.get('users', ())))} Groups=(null) "
        f"Accounts={null(','.join(resv.get('accounts', ())))} Licenses=(null) State={state} BurstBuffer=(null) "
        "Watts=n/a",
        "MaxStartDelay=(null)",
    ]
    return record(lines)
