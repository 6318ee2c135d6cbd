"""scontrol's ``show job`` output, and the record layout every ``show`` shares (the nodes,
partitions, reservations and host lists: :mod:`.scontrol_nodes`).

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

from minislurm.cli.fmt.fields import mem_units, printable, timestamp
from minislurm.core.hostlist import compress
from minislurm.core.timefmt import format_elapsed

IND = "\n   "


def record(lines: list[str]) -> str:
    return IND.join(printable(line) for line in lines) + "\n\n"


def one_line(record: str) -> str:
    """``scontrol -o``: a record's lines joined by one space each."""
    return record.rstrip("\n").replace(IND, " ") + "\n"


def show_time(epoch: float | None) -> str:
    return timestamp(epoch, "Unknown")


def limit_text(seconds: float | None) -> str:
    return "UNLIMITED" if seconds is None else format_elapsed(seconds)


def null(value) -> str:
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
    end_text = show_time(end)
    if end is None and start and state in ("PENDING", "RUNNING"):
        end_text = "Unknown" if limit is None else show_time(start + limit)
    eligible = None if job.get("hold") else job.get("eligible_time")
    first = f"JobId={job['job_id']} "
    if job.get("array_job_id") is not None:
        task = job.get("array_task_str") or job.get("array_task_id")
        first += f"ArrayJobId={job['array_job_id']} ArrayTaskId={task} "
        if job.get("array_max_tasks"):
            first += f"ArrayTaskThrottle={job['array_max_tasks']} "
    elif job.get("het_job_id") is not None:
        first += f"HetJobId={job['het_job_id']} HetJobOffset={job['het_job_offset']} "
    uid, gid = job.get("uid", 0), job.get("gid", job.get("uid", 0))
    reason = (job.get("reason") or "None").replace(" ", "_")
    nodes, cpus = job.get("num_nodes", 1), job.get("num_cpus", 0)
    num_nodes = f"{nodes}-{job['max_nodes']}" if pending and job.get("max_nodes") else str(nodes)
    mem = job.get("mem_per_node", 0)
    per_node_mem = mem if mem > 0 else 0
    total_mem = job.get("alloc_mem", per_node_mem * nodes)
    gpus_per_node = int(job["gres"].rsplit(":", 1)[1]) if job.get("gres") else 0
    lines = [
        first + f"JobName={job.get('name', '')}",
        *([f"HetJobIdSet={job['het_job_id_set']}"] if job.get("het_job_id_set") else []),
        f"UserId={job.get('user', '')}({uid}) GroupId={job.get('group', job.get('user', ''))}({gid}) "
        "MCS_label=N/A",
        f"Priority={job.get('priority', 0)} Nice={job.get('nice', 0)} Account={job.get('account', '')} "
        f"QOS={job.get('qos', 'normal')}",
        f"JobState={state} Reason={reason} Dependency={null(job.get('dependency'))}",
        f"Requeue={int(bool(job.get('requeue', True)))} Restarts={job.get('restart_count', 0)} "
        f"BatchFlag={int(bool(job.get('batch', True)))} Reboot=0 ExitCode={job.get('exit_code', '0:0')}",
        *(["DerivedExitCode=0:0"] if details else []),  # steps' codes are not kept: see the docstring
        f"RunTime={format_elapsed(max(run, 0))} TimeLimit={limit_text(limit)} TimeMin=N/A",
        f"SubmitTime={show_time(job.get('submit_time'))} EligibleTime={show_time(eligible)}",
        f"AccrueTime={show_time(eligible)}",
        f"StartTime={show_time(start)} EndTime={end_text} Deadline=N/A",
        f"SuspendTime=None SecsPreSuspend=0 LastSchedEval={show_time(job.get('start_time') or job.get('submit_time'))}"
        " Scheduler=Main",
        f"Partition={job.get('partition', '')} AllocNode:Sid={job.get('submit_host') or 'localhost'}:"
        f"{job.get('alloc_sid', 0)}",
        f"ReqNodeList={null(job.get('req_nodes'))} ExcNodeList={null(job.get('exc_nodes'))}",
        f"NodeList={null(job.get('nodes'))}" + (f" SchedNodeList={job['sched_nodes']}"
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
        f"MinCPUsNode={job.get('cpus_per_task', 1) * max(1, job.get('ntasks_per_node') or 1)} " + (f"MinMemoryCPU={mem_units(job['mem_per_cpu'])}"
                                                          if job.get("mem_per_cpu") else
                                                          f"MinMemoryNode={mem_units(per_node_mem)}")
        + " MinTmpDiskNode=0",
        "Features=(null) DelayBoot=00:00:00",
    ]
    if job.get("reservation"):
        lines.append(f"Reservation={job['reservation']}")
    lines += [f"OverSubscribe={'NO' if job.get('exclusive') else 'OK'} Contiguous=0 Licenses=(null) "
              "Network=(null)",
              f"Command={null(None if job.get('command') == 'wrap' else job.get('command'))}",  # --wrap: (null)
              f"WorkDir={job.get('work_dir', '')}"]
    if job.get("batch", True):
        lines += [f"StdErr={_out_path(job, job.get('stderr') or job.get('stdout'))}",
                  f"StdIn={job.get('stdin') or '/dev/null'}",
                  f"StdOut={_out_path(job, job.get('stdout'))}"]
    lines.append("Power=")
    if job.get("tres_per"):
        lines.append("=".join(job["tres_per"]))
    elif job.get("gres"):
        lines.append(f"TresPerNode=gres:{job['gres']}")
    return record(lines + [""])
