"""scontrol's ``show job|node|partition|hostnames|hostlist`` output.

Records are Slurm's multi-line ``Key=Value`` layout: the first line unindented, the rest
indented three spaces, a blank line after each record (src/api/job_info.c, node_info.c,
partition_info.c).  Keys minislurm has no value for print what a plain cluster shows:
``QOS=normal``, ``MCS_label=N/A``, ``Features=(null)``, ``Licenses=(null)``, ...

Optional view keys read besides the TypedDicts: job ``uid``, ``gid``, ``group``, ``qos``,
``batch``, ``submit_host``, ``alloc_sid``, ``stdin``, ``max_nodes``, ``ntasks_per_node``,
``array_max_tasks``, ``array_task_str``, ``alloc_mem``; node ``arch``, ``os``, ``addr``,
``sockets``, ``cores_per_socket``, ``threads_per_core``, ``reason_user``, ``reason_time``,
``boot_time``, ``slurmd_start_time``, ``last_busy``; partition ``total_mem`` (MB).

Unlike Slurm, control characters in a value (a job name with a newline or an escape
sequence) print escaped: see :func:`minislurm.cli.fmt.fields.printable`.
"""

from __future__ import annotations

import time

from minislurm.cli.fmt.fields import mem_units, printable, timestamp
from minislurm.core.hostlist import compress, expand
from minislurm.core.timefmt import format_elapsed

IND = "\n   "


def _record(lines: list[str]) -> str:
    return IND.join(printable(line) for line in lines) + "\n\n"


def one_line(record: str) -> str:
    """``scontrol -o``: a record's lines joined by one space each."""
    return record.rstrip("\n").replace(IND, " ") + "\n"


def _time(epoch: float | None) -> str:
    return timestamp(epoch, "Unknown")


def _limit(seconds: float | None) -> str:
    return "UNLIMITED" if seconds is None else format_elapsed(seconds)


def _null(value) -> str:
    return "(null)" if value in (None, "") else str(value)


def tres_string(cpus: int, mem_mb: float, nodes: int, gpus: int = 0, billing: int | None = None) -> str:
    """scontrol's TRES order: cpu, mem, node, billing, then GRES."""
    parts = [f"cpu={cpus}"]
    if mem_mb > 0:
        parts.append(f"mem={mem_units(mem_mb)}")
    parts.append(f"node={nodes}")
    parts.append(f"billing={cpus if billing is None else billing}")
    if gpus:
        parts.append(f"gres/gpu={gpus}")
    return ",".join(parts)


def _out_path(job: dict, pattern: str | None) -> str:
    """StdOut/StdErr as scontrol shows them: patterns %A %a %j %u %x expanded, made absolute."""
    array_id, task = job.get("array_job_id"), job.get("array_task_id")
    if not pattern:
        name = f"slurm-{array_id}_{task}.out" if array_id is not None and task is not None \
            else f"slurm-{job['job_id']}.out"
        return f"{job.get('work_dir', '')}/{name}"
    subs = {"A": str(array_id if array_id is not None else job["job_id"]),
            "a": str(task if task is not None else 4294967294), "j": str(job["job_id"]),
            "u": job.get("user", ""), "x": job.get("name", ""), "%": "%"}
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "%" and i + 1 < len(pattern) and pattern[i + 1] in subs:
            out.append(subs[pattern[i + 1]])
            i += 2
            continue
        out.append(ch)
        i += 1
    path = "".join(out)
    return path if path.startswith("/") else f"{job.get('work_dir', '')}/{path}"


def _ids(values: list[int]) -> str:
    """``[0, 1, 3]`` -> ``0-1,3``."""
    runs: list[list[int]] = []
    for v in sorted(values):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _details(job: dict) -> list[str]:
    """``show job -d``: the job's GRES, then CPUs, memory and GPU indices per node."""
    total = sum(len(g) for *_, g in job.get("alloc_detail", []))
    kind = job.get("gres", "").rsplit(":", 1)[0] or "gpu"
    lines = [f"JOB_GRES={f'{kind}:{total}' if total else '(null)'}"]
    groups: dict[str, list[str]] = {}  # nodes with the same line are listed together, as c[1-2]
    for name, first, cpus, mem, gpus in job.get("alloc_detail", []):
        gres = f"{kind}:{len(gpus)}(IDX:{_ids(gpus)})" if gpus else ""
        groups.setdefault(f"CPU_IDs={_ids(list(range(first, first + cpus)))} Mem={mem} GRES={gres}", []).append(name)
    return lines + [f"  Nodes={compress(names)} {rest}" for rest, names in groups.items()]


def show_job(job: dict, *, now: float, details: bool = False) -> str:
    """``scontrol show job <id>`` for one job; ``details`` is ``-d`` (DerivedExitCode, whose
    steps' exit codes only sacct keeps here, so it is 0:0; and the per-node allocation)."""
    state = job.get("state", "PENDING")
    pending = state == "PENDING"
    start = job.get("expected_start") if pending else job.get("start_time")
    limit = job.get("time_limit")
    if pending or not job.get("start_time"):
        run = 0.0
    else:
        run = (now if state == "RUNNING" or not job.get("end_time") else job["end_time"]) - job["start_time"]
    end = job.get("end_time")
    end_text = _time(end)
    if end is None and start and state in ("PENDING", "RUNNING"):
        end_text = "Unknown" if limit is None else _time(start + limit)
    eligible = None if job.get("hold") else job.get("eligible_time")
    first = f"JobId={job['job_id']} "
    if job.get("array_job_id") is not None:
        task = job.get("array_task_str") or job.get("array_task_id")
        first += f"ArrayJobId={job['array_job_id']} ArrayTaskId={task} "
        if job.get("array_max_tasks"):
            first += f"ArrayTaskThrottle={job['array_max_tasks']} "
    uid, gid = job.get("uid", 0), job.get("gid", job.get("uid", 0))
    reason = (job.get("reason") or "None").replace(" ", "_")
    nodes, cpus = job.get("num_nodes", 1), job.get("num_cpus", 0)
    num_nodes = f"{nodes}-{job.get('max_nodes', nodes)}" if pending else str(nodes)
    mem = job.get("mem_per_node", 0)
    per_node_mem = mem if mem > 0 else 0
    total_mem = job.get("alloc_mem", per_node_mem * nodes)
    gpus_per_node = int(job["gres"].rsplit(":", 1)[1]) if job.get("gres") else 0
    lines = [
        first + f"JobName={job.get('name', '')}",
        f"UserId={job.get('user', '')}({uid}) GroupId={job.get('group', job.get('user', ''))}({gid}) "
        "MCS_label=N/A",
        f"Priority={job.get('priority', 0)} Nice={job.get('nice', 0)} Account={job.get('account', '')} "
        f"QOS={job.get('qos', 'normal')}",
        f"JobState={state} Reason={reason} Dependency={_null(job.get('dependency'))}",
        f"Requeue={int(bool(job.get('requeue', True)))} Restarts={job.get('restart_count', 0)} "
        f"BatchFlag={int(bool(job.get('batch', True)))} Reboot=0 ExitCode={job.get('exit_code', '0:0')}",
        *(["DerivedExitCode=0:0"] if details else []),  # steps' codes are not kept: see the docstring
        f"RunTime={format_elapsed(max(run, 0))} TimeLimit={_limit(limit)} TimeMin=N/A",
        f"SubmitTime={_time(job.get('submit_time'))} EligibleTime={_time(eligible)}",
        f"AccrueTime={_time(eligible)}",
        f"StartTime={_time(start)} EndTime={end_text} Deadline=N/A",
        f"SuspendTime=None SecsPreSuspend=0 LastSchedEval={_time(job.get('start_time') or job.get('submit_time'))}"
        " Scheduler=Main",
        f"Partition={job.get('partition', '')} AllocNode:Sid={job.get('submit_host') or 'localhost'}:"
        f"{job.get('alloc_sid', 0)}",
        f"ReqNodeList={_null(job.get('req_nodes'))} ExcNodeList={_null(job.get('exc_nodes'))}",
        f"NodeList={_null(job.get('nodes'))}" + (f" SchedNodeList={job['sched_nodes']}"
                                                 if job.get("sched_nodes") else ""),
    ]
    if job.get("batch_host"):
        lines.append(f"BatchHost={job['batch_host']}")
    ntasks = job.get("num_tasks")
    lines += [
        f"NumNodes={num_nodes} NumCPUs={cpus} NumTasks={'N/A' if ntasks is None else ntasks} "
        f"CPUs/Task={job.get('cpus_per_task', 1)} ReqB:S:C:T=0:0:*:*",
        f"TRES={tres_string(cpus, total_mem, nodes, gpus_per_node * nodes)}",
        f"Socks/Node=* NtasksPerN:B:S:C={job.get('ntasks_per_node', 0)}:0:*:* CoreSpec=*",
        *(_details(job) if details else []),
        f"MinCPUsNode={cpus // max(nodes, 1)} MinMemoryNode={mem_units(per_node_mem)} MinTmpDiskNode=0",
        "Features=(null) DelayBoot=00:00:00",
    ]
    if job.get("reservation"):
        lines.append(f"Reservation={job['reservation']}")
    lines += [f"OverSubscribe={'NO' if job.get('exclusive') else 'OK'} Contiguous=0 Licenses=(null) "
              "Network=(null)",
              f"Command={_null(job.get('command'))}",
              f"WorkDir={job.get('work_dir', '')}"]
    if job.get("batch", True):
        lines += [f"StdErr={_out_path(job, job.get('stderr') or job.get('stdout'))}",
                  f"StdIn={job.get('stdin') or '/dev/null'}",
                  f"StdOut={_out_path(job, job.get('stdout'))}"]
    lines.append("Power=")
    if job.get("gres"):
        lines.append(f"TresPerNode=gres/{job['gres']}")
    return _record(lines + [""])


_NODE_BASE = {"idle": "IDLE", "mix": "MIXED", "alloc": "ALLOCATED", "down": "DOWN", "drain": "IDLE",
              "drng": "MIXED", "comp": "IDLE", "fail": "DOWN", "unk": "UNKNOWN", "resv": "IDLE", "maint": "IDLE"}


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
    gpus, alloc_gpus = node.get("gpus", 0), len(node.get("alloc_gpus", ()))
    cfg = tres_string(cpus, node.get("real_memory", 0), 1, gpus)
    cfg = cfg.replace(",node=1", "")  # nodes report no node= TRES
    alloc = []
    if node.get("alloc_cpus"):
        alloc.append(f"cpu={node['alloc_cpus']}")
    if node.get("alloc_mem"):
        alloc.append(f"mem={mem_units(node['alloc_mem'])}")
    if alloc_gpus:
        alloc.append(f"gres/gpu={alloc_gpus}")
    lines = [
        f"NodeName={name} Arch={node.get('arch', 'x86_64')} CoresPerSocket={node.get('cores_per_socket', 1)} ",
        f"CPUAlloc={node.get('alloc_cpus', 0)} CPUEfctv={cpus} CPUTot={cpus} CPULoad=0.00",
        "AvailableFeatures=(null)",
        "ActiveFeatures=(null)",
        f"Gres={node.get('gres') or '(null)'}",
        f"NodeAddr={node.get('addr') or name} NodeHostName={name} ",
        f"OS={node.get('os', 'Linux')} ",
        f"RealMemory={node.get('real_memory', 0)} AllocMem={node.get('alloc_mem', 0)} FreeMem=N/A "
        f"Sockets={node.get('sockets', cpus)} Boards=1",
        f"State={node_state_string(node)} ThreadsPerCore={node.get('threads_per_core', 1)} TmpDisk=0 "
        "Weight=1 Owner=N/A MCS_label=N/A",
    ]
    if node.get("partitions"):
        lines.append(f"Partitions={','.join(node['partitions'])} ")
    lines += [
        f"BootTime={timestamp(node.get('boot_time'), 'None')} "
        f"SlurmdStartTime={timestamp(node.get('slurmd_start_time'), 'None')}",
        f"LastBusyTime={timestamp(node.get('last_busy'), 'Unknown')} ResumeAfterTime=None",
        f"CfgTRES={cfg}",
        f"AllocTRES={','.join(alloc)}",
        "CapWatts=n/a",
        "CurrentWatts=0 AveWatts=0",
        "ExtSensorsJoules=n/a ExtSensorsWatts=0 ExtSensorsTemp=n/a",
    ]
    if node.get("reason"):
        who = ""
        if node.get("reason_time"):
            who = f" [{node.get('reason_user') or 'root'}@{timestamp(node['reason_time'])}]"
        lines.append(f"Reason={node['reason']}{who}")
    else:
        lines.append("")  # the record ends with an empty indented line when there is no reason
    return _record(lines)


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
        "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL",
        f"AllocNodes=ALL Default={'YES' if part.get('default') else 'NO'} QoS=N/A",
        f"DefaultTime={'NONE' if default_time is None else format_elapsed(default_time)} DisableRootJobs=NO "
        "ExclusiveUser=NO ExclusiveTopo=NO GraceTime=0 Hidden=NO",
        f"MaxNodes={'UNLIMITED' if max_nodes is None else max_nodes} MaxTime={_limit(part.get('max_time'))} "
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
    return _record(lines)


def show_hostnames(expr: str) -> str:
    """``scontrol show hostnames``: one host per line, in the given order."""
    return "".join(h + "\n" for h in expand(expr))


def show_hostlist(expr: str, sorted: bool = False) -> str:
    """``scontrol show hostlist`` (order and duplicates kept) or ``hostlistsorted``."""
    return compress(expand(expr), sort=sorted) + "\n"


RESV_FLAG_ORDER = ["MAINT", "IGNORE_JOBS", "SPEC_NODES"]  # the order Slurm lists them in


def show_reservation(resv: dict, *, now: float | None = None) -> str:
    """``scontrol show reservation``: times, nodes, who may use it, and whether it is active."""
    start, end = resv["start"], resv.get("end")
    now = time.time() if now is None else now
    state = "ACTIVE" if start <= now and (end is None or now < end) else "INACTIVE"
    nodes = expand(resv["nodes"]) if isinstance(resv["nodes"], str) else list(resv["nodes"])
    cpus = resv.get("cpus", 0)
    flags = sorted(resv.get("flags", ()), key=lambda f: (RESV_FLAG_ORDER.index(f) if f in RESV_FLAG_ORDER else 99, f))
    lines = [
        f"ReservationName={resv['name']} StartTime={_time(start)} "
        f"EndTime={_time(end) if end is not None else 'Unknown'} "
        f"Duration={_limit(None if end is None else end - start)}",
        f"Nodes={compress(nodes)} NodeCnt={len(nodes)} CoreCnt={cpus} Features=(null) "
        f"PartitionName={_null(resv.get('partition') or '')} Flags={','.join(flags)}",
        f"TRES=cpu={cpus}" if cpus else "TRES=(null)",
        f"Users={_null(','.join(resv.get('users', ())))} Groups=(null) "
        f"Accounts={_null(','.join(resv.get('accounts', ())))} Licenses=(null) State={state} BurstBuffer=(null) "
        "Watts=n/a",
        "MaxStartDelay=(null)",
    ]
    return _record(lines)
