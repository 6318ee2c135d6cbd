"""``--json`` and ``--yaml``: the documents Slurm 22.05's commands print, built from the same views
the text formats read.

In 22.05 a command's ``--json`` is slurmrestd's answer run in-process: squeue loads the
``openapi/v0.0.38`` plugin and prints what ``GET /slurm/v0.0.38/jobs`` would, sinfo what
``GET .../nodes`` would, sacct what ``openapi/dbv0.0.38``'s ``GET /slurmdb/v0.0.38/jobs`` would.
So every document is ``{"meta": {"plugin": {"type", "name"}, "Slurm": {"version": {"major",
"micro", "minor"}, "release"}}, "errors": [], <list>}``, with no ``warnings`` (those came with
23.02's data_parser).  What follows from that, reproduced here:

* squeue's and sinfo's ``--json`` ignore the command's filters (``-u``, ``-t``, ``-p``, ...): 22.05
  dumps every job the controller still holds (finished ones included) and every node;
  sacct's ``--json`` keeps its job selection (``-j``, ``-S``, ``-u``, ``-s``, ...).
* a value Slurm has not got is ``null``, not ``""``; times are epoch seconds, ``time_limit`` minutes.
* squeue's ``job_state`` and sacct's ``state.current`` are plain strings (``"PENDING"``), not the
  lists of 23.11; squeue's ``exit_code`` is the raw wait status (exit 1 -> 256, signal 9 -> 9).
* sacct's ``exit_code`` is ``{"status", "return_code"}`` and, as in 22.05 (fixed in 23.11), any
  normal exit reads ``"SUCCESS"`` with return code 0, a non-zero one too; a signal reads
  ``"SIGNALED"`` with ``signal: {signal_id, name}``.
* a node's ``state`` is its base state in lower case (``"idle"``, ``"mixed"``), its flags in
  ``state_flags`` (``["DRAIN"]``); a partition's minimum node count is keyed ``"min nodes per job"``
  (with spaces, as 22.05 spells it).

Beyond 22.05 (minislurm's additions, in the same shape): ``scontrol --json show job|node|partition``
(scontrol's ``--json`` came in 23.02) prints the squeue/sinfo document of those records, or
``{"partitions": [...]}``; ``sshare --json`` (23.11's) prints ``{"shares": [...]}`` with plain
numbers, one entry per sshare row.

Not known from the twin (it cannot be built here), taken from the v0.0.38 sources' field lists and
minislurm's model, so worth checking against a real 22.05: the TRES ``name`` of cpu/mem/node
(``null``), the GPU TRES id (1001), the cores listed under ``job_resources.allocated_nodes`` (all on
socket 0, one core per CPU), sacct's ``flags`` (``STARTED_ON_SCHEDULE`` for any started job),
``reservation.name`` (22.05 prints a number there; minislurm the name or 0), the steps' TRES usage
(only CPU time and MaxRSS are measured here), and the ``free_memory``/``cpu_load`` of nodes (0).
"""

from __future__ import annotations

import json
import pwd
import grp
import signal as signals

from minislurm.cli.fmt.sacct import derived_exit
from minislurm.cli.fmt.scontrol import _ids, _out_path, tres_string
from minislurm.cli.fmt.scontrol_nodes import alloc_tres, node_state_string
from minislurm.cli.helptext import SLURM_VERSION
from minislurm.core.hostlist import expand

PLUGIN = {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}
DB_PLUGIN = {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"}
TRES_IDS = {"cpu": 1, "mem": 2, "energy": 3, "node": 4, "billing": 5, "gres/gpu": 1001}
NO_VAL = 4294967294  # Slurm's "no value" of a 32-bit field, where 22.05 prints the number


def _meta(plugin: dict) -> dict:
    major, minor, micro = (int(x) for x in SLURM_VERSION.split("."))
    return {"plugin": dict(plugin),
            "Slurm": {"version": {"major": major, "micro": micro, "minor": minor}, "release": SLURM_VERSION}}


def document(plugin: dict, key: str, items: list) -> dict:
    return {"meta": _meta(plugin), "errors": [], key: items}


def dump(doc: dict, yaml: bool = False) -> str:
    """The text a command prints: JSON indented (22.05's pretty form), or YAML with ``--yaml``."""
    if yaml:
        import yaml as pyyaml  # present with the project's tooling; the commands import it only here
        return pyyaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
    return json.dumps(doc, indent=2) + "\n"


def _epoch(t) -> int:
    return int(t) if t else 0


def _minutes(seconds) -> int | None:
    return None if seconds is None else int(seconds // 60)


def _user_name(uid) -> str | None:
    try:
        return pwd.getpwuid(int(uid)).pw_name
    except (KeyError, TypeError, ValueError):
        return None


def _group_name(gid) -> str | None:
    try:
        return grp.getgrgid(int(gid)).gr_name
    except (KeyError, TypeError, ValueError):
        return None


def _primary_group(uid) -> str | None:
    try:
        return _group_name(pwd.getpwuid(int(uid)).pw_gid)
    except (KeyError, TypeError, ValueError):
        return None


def _none(text):
    return text if text not in (None, "") else None


def _exit_pair(text: str | None) -> tuple[int, int]:
    code, _, sig = (text or "0:0").partition(":")
    return int(code or 0), int(sig or 0)


def _gpus_per_node(job: dict) -> int:
    return int(job["gres"].rsplit(":", 1)[1]) if job.get("gres") else 0


# -- squeue --json, scontrol --json show job ------------------------------------------------------
def _gres_detail(job: dict) -> list[str]:
    """Per allocated node ``gpu:2(IDX:0-1)``, as ``scontrol show job -d`` prints JOB_GRES's nodes."""
    kind = (job.get("gres") or "").rsplit(":", 1)[0] or "gpu"
    return [f"{kind}:{len(g)}(IDX:{_ids(g)})" for g in (job.get("gpus") or {}).values() if g] \
        if job.get("gres") else []


def _job_resources(job: dict) -> dict | None:
    detail = job.get("alloc_detail") or []
    if not detail:
        return None
    nodes = []
    for name, first, cpus, mem, _gpus in detail:
        cores = {str(c): "allocated" for c in range(first, first + cpus)}
        nodes.append({"sockets": {"0": {"cores": cores}}, "nodename": name, "cpus_used": 0,
                      "memory_used": 0, "memory_allocated": mem})
    return {"nodes": job.get("nodes"), "allocated_cores": sum(d[2] for d in detail),
            "allocated_hosts": len(detail), "allocated_nodes": nodes}


def _job_tres(job: dict, allocated: bool) -> str | None:
    nodes, cpus = job.get("num_nodes", 1), job.get("num_cpus", 0)
    mem = job.get("mem_per_node", 0)
    total_mem = job.get("alloc_mem", (mem if mem > 0 else 0) * nodes)
    if allocated and not job.get("nodes"):
        return None
    return tres_string(cpus, total_mem, nodes, _gpus_per_node(job) * nodes)


def job_record(job: dict, *, cluster: str | None = None) -> dict:
    """One job as v0.0.38's ``GET /jobs`` shows it, from a full job view (``GET /jobs``)."""
    state = job.get("state", "PENDING")
    pending = state == "PENDING"
    task = job.get("array_task_id")
    array_job = job.get("array_job_id")
    uid, gid = job.get("uid", 0), job.get("gid", job.get("uid", 0))
    mem = job.get("mem_per_node", 0)
    code, sig = _exit_pair(job.get("exit_code"))
    limit = job.get("time_limit")
    batch = job.get("batch", True)
    start = job.get("expected_start") if pending else job.get("start_time")
    end = job.get("end_time")
    if end is None and start and limit is not None and state in ("PENDING", "RUNNING"):
        end = start + limit
    gpus = _gpus_per_node(job)
    kind = (job.get("gres") or "").rsplit(":", 1)[0]
    return {
        "account": job.get("account"), "accrue_time": _epoch(None if job.get("hold") else job.get("eligible_time")),
        "admin_comment": None,
        "array_job_id": array_job or 0, "array_task_id": task,
        "array_max_tasks": job.get("array_max_tasks") or 0, "array_task_string": job.get("array_task_str"),
        "association_id": 0, "batch_features": None, "batch_flag": bool(batch),
        "batch_host": job.get("batch_host"), "flags": [] if pending else ["JOB_WAS_RUNNING"],
        "burst_buffer": None, "burst_buffer_state": None, "cluster": cluster, "cluster_features": None,
        "command": job.get("command"), "comment": None, "container": None, "contiguous": False,
        "core_spec": None, "thread_spec": None, "cores_per_socket": None, "billable_tres": float(job.get("num_cpus", 0)),
        "cpus_per_task": job.get("cpus_per_task", 1), "cpu_frequency_minimum": None,
        "cpu_frequency_maximum": None, "cpu_frequency_governor": None, "cpus_per_tres": None,
        "deadline": 0, "delay_boot": 0, "dependency": job.get("dependency"), "derived_exit_code": 0,
        "eligible_time": _epoch(None if job.get("hold") else job.get("eligible_time")), "end_time": _epoch(end),
        "excluded_nodes": _none(job.get("exc_nodes")), "exit_code": code * 256 + sig,
        "features": None, "federation_origin": None, "federation_siblings_active": None,
        "federation_siblings_viable": None, "gres_detail": _gres_detail(job),
        "group_id": gid, "group_name": job.get("group") or _group_name(gid),
        "job_id": job["job_id"], **({"job_resources": r} if (r := _job_resources(job)) else {}),
        "job_state": state, "last_sched_evaluation": _epoch(job.get("start_time") or job.get("submit_time")),
        "licenses": None, "max_cpus": 0, "max_nodes": job.get("max_nodes", 0) if pending else 0,
        "mcs_label": None, "memory_per_tres": None, "name": job.get("name"), "nodes": _none(job.get("nodes")),
        "nice": job.get("nice") or None, "tasks_per_core": None, "tasks_per_node": job.get("ntasks_per_node", 0),
        "tasks_per_socket": None, "tasks_per_board": 0, "cpus": job.get("num_cpus"),
        "node_count": job.get("num_nodes", 1), "tasks": job.get("num_tasks"),
        "het_job_id": 0, "het_job_id_set": None, "het_job_offset": 0, "partition": job.get("partition"),
        "prefer": None,
        "memory_per_node": mem if mem > 0 else None, "memory_per_cpu": None,
        "minimum_cpus_per_node": job.get("num_cpus", 0) // max(job.get("num_nodes", 1), 1),
        "minimum_tmp_disk_per_node": 0, "preempt_time": 0, "pre_sus_time": 0,
        "priority": job.get("priority", 0), "profile": None, "qos": job.get("qos", "normal"), "reboot": False,
        "required_nodes": _none(job.get("req_nodes")), "requeue": bool(job.get("requeue", True)),
        "resize_time": 0, "restart_cnt": job.get("restart_count", 0), "resv_name": job.get("reservation"),
        "shared": None if not job.get("exclusive") else "none", "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"],
        "sockets_per_board": 0, "sockets_per_node": None, "start_time": _epoch(start),
        "state_description": None, "state_reason": (job.get("reason") or "None").replace(" ", "_"),
        "standard_error": _out_path(job, job.get("stderr") or job.get("stdout")) if batch else None,
        "standard_input": (job.get("stdin") or "/dev/null") if batch else None,
        "standard_output": _out_path(job, job.get("stdout")) if batch else None,
        "submit_time": _epoch(job.get("submit_time")), "suspend_time": 0, "system_comment": None,
        "time_limit": _minutes(limit), "time_minimum": 0, "threads_per_core": None,
        "tres_bind": None, "tres_freq": None, "tres_per_job": None,
        "tres_per_node": f"gres:{kind}:{gpus}" if gpus else None, "tres_per_socket": None, "tres_per_task": None,
        "tres_req_str": _job_tres(job, allocated=False), "tres_alloc_str": _job_tres(job, allocated=True),
        "user_id": uid, "user_name": job.get("user") or _user_name(uid), "wckey": None,
        "current_working_directory": job.get("work_dir"),
    }


def jobs_document(jobs: list[dict], *, cluster: str | None = None) -> dict:
    """``squeue --json`` (and minislurm's ``scontrol --json show job``)."""
    return document(PLUGIN, "jobs", [job_record(j, cluster=cluster)
                                     for j in sorted(jobs, key=lambda j: j["job_id"])])


# -- sinfo --json, scontrol --json show node -------------------------------------------------------
def node_record(node: dict) -> dict:
    """One node as v0.0.38's ``GET /nodes`` shows it, from a node view (``GET /nodes``)."""
    base, *flags = node_state_string(node).split("+")
    name, cpus = node["name"], node.get("cpus", 0)
    gpus, used = node.get("gpus", 0), list(node.get("alloc_gpus", ()))
    kind = (node.get("gres") or "gpu").rsplit(":", 1)[0]
    used_text = f"{kind}:{len(used)}(IDX:{_ids(used) if used else 'N/A'})" if gpus else None
    sockets = node.get("sockets", cpus)
    reason_user = node.get("reason_user") or ("root" if node.get("reason") else None)
    return {
        "architecture": node.get("arch", "x86_64"), "burstbuffer_network_address": None, "boards": 1,
        "boot_time": _epoch(node.get("boot_time")), "comment": None, "cores": node.get("cores_per_socket", 1),
        "cpu_binding": 0, "cpu_load": 0, "extra": None, "free_memory": 0, "cpus": cpus,
        "last_busy": _epoch(node.get("last_busy")), "features": None, "active_features": None,
        "gres": _none(node.get("gres")), "gres_drained": "N/A", "gres_used": used_text, "mcs_label": None,
        "name": name, "next_state_after_reboot": "invalid", "address": node.get("addr") or name, "hostname": name,
        "state": base.lower(), "state_flags": flags, "next_state_after_reboot_flags": [],
        "operating_system": node.get("os", "Linux"), "owner": None, "partitions": list(node.get("partitions", ())),
        "port": 6818, "real_memory": node.get("real_memory", 0), "reason": node.get("reason") or "",
        "reason_changed_at": _epoch(node.get("reason_time")), "reason_set_by_user": reason_user,
        "slurmd_start_time": _epoch(node.get("slurmd_start_time")), "sockets": sockets,
        "threads": node.get("threads_per_core", 1), "temporary_disk": 0, "weight": 1,
        "tres": tres_string(cpus, node.get("real_memory", 0), 1, gpus).replace(",node=1", ""),
        "slurmd_version": SLURM_VERSION,
        "alloc_memory": node.get("alloc_mem", 0), "alloc_cpus": node.get("alloc_cpus", 0),
        "idle_cpus": cpus - node.get("alloc_cpus", 0), "tres_used": alloc_tres(node) or None,
        "tres_weighted": float(node.get("alloc_cpus", 0)),
    }


def nodes_document(nodes: list[dict]) -> dict:
    """``sinfo --json`` (and minislurm's ``scontrol --json show node``)."""
    return document(PLUGIN, "nodes", [node_record(n) for n in nodes])


def partition_record(part: dict, nodes: list[dict] | None = None) -> dict:
    """One partition as v0.0.38's ``GET /partitions`` shows it."""
    members = set(expand(part.get("nodes") or ""))
    mem = part.get("total_mem")
    if mem is None:
        mem = sum(n.get("real_memory", 0) for n in nodes or () if n["name"] in members)
    max_nodes, max_time = part.get("max_nodes"), part.get("max_time")
    return {
        "flags": ["default"] if part.get("default") else [], "preemption_mode": ["disabled"],
        "allowed_allocation_nodes": None, "allowed_accounts": None, "allowed_groups": None, "allowed_qos": None,
        "alternative": None, "billing_weights": None, "default_memory_per_cpu": None,
        "default_memory_per_node": None, "default_time_limit": _minutes(part.get("default_time")),
        "denied_accounts": None, "denied_qos": None, "preemption_grace_time": 0, "maximum_cpus_per_node": -1,
        "maximum_memory_per_cpu": None, "maximum_memory_per_node": None,
        "maximum_nodes_per_job": -1 if max_nodes is None else max_nodes,
        "max_time_limit": -1 if max_time is None else _minutes(max_time), "min nodes per job": 0,
        "name": part["name"], "nodes": _none(part.get("nodes")), "over_time_limit": None,
        "priority_job_factor": part.get("priority_job_factor", 1), "priority_tier": part.get("priority_tier", 1),
        "qos": None, "state": part.get("state", "UP"), "total_cpus": part.get("total_cpus", 0),
        "total_nodes": part.get("total_nodes", 0),
        "tres": tres_string(part.get("total_cpus", 0), mem or 0, part.get("total_nodes", 0),
                            part.get("total_gpus", 0)),
    }


def partitions_document(parts: list[dict], nodes: list[dict] | None = None) -> dict:
    """minislurm's ``scontrol --json show partition`` (v0.0.38's ``GET /partitions``)."""
    return document(PLUGIN, "partitions", [partition_record(p, nodes) for p in parts])


# -- sacct --json -------------------------------------------------------------------------------------
def _exit_code(code: int, sig: int, pending: bool = False) -> dict:
    """22.05's dbv0.0.38 form of a wait status (see the module's docstring for its SUCCESS)."""
    if pending:
        return {"status": "PENDING", "return_code": None}
    if sig:
        try:
            name = signals.strsignal(sig)
        except ValueError:
            name = None
        return {"status": "SIGNALED", "return_code": None, "signal": {"signal_id": sig, "name": name}}
    return {"status": "SUCCESS", "return_code": 0}


def _tres_list(items: dict[str, int]) -> list[dict]:
    out = []
    for key in ("cpu", "mem", "node", "billing", "gres/gpu"):
        if items.get(key):
            kind, _, name = key.partition("/")
            out.append({"type": kind, "name": name or None, "id": TRES_IDS[key], "count": int(items[key])})
    return out


def _alloc_tres(r: dict, step: bool) -> list[dict]:
    if not r.get("alloc_cpus"):
        return []
    nnodes = r.get("nnodes", 1) or 1
    mem = r.get("req_mem") or 0
    return _tres_list({"cpu": r["alloc_cpus"], "mem": mem * nnodes if mem > 0 else 0, "node": nnodes,
                       "billing": 0 if step else r["alloc_cpus"], "gres/gpu": r.get("alloc_gpus", 0)})


def _req_tres(r: dict) -> list[dict]:
    mem = r.get("req_mem") or 0
    nodes = r.get("req_nodes", 1)
    return _tres_list({"cpu": r.get("req_cpus", 0), "mem": mem * nodes if mem > 0 else 0, "node": nodes,
                       "billing": r.get("req_cpus", 0), "gres/gpu": r.get("req_gpus", 0)})


def _cpu_time(seconds) -> dict:
    whole = int(seconds or 0)
    return {"seconds": whole, "microseconds": int(round(((seconds or 0) - whole) * 1e6))}


def _elapsed(r: dict, now: float | None) -> int:
    if not r.get("start"):
        return 0
    end = r.get("end") if r.get("end") is not None else (now or r["start"])
    return max(int(end - r["start"]), 0)


def _step_record(job: dict, r: dict, now: float | None) -> dict:
    names = expand(r["nodes"]) if r.get("nodes") and r["nodes"] != "None assigned" else []
    usage = []
    if r.get("total_cpu") is not None:
        usage.append({"type": "cpu", "name": None, "id": 1, "count": int(r["total_cpu"] * 1000)})
    if r.get("max_rss") is not None:
        usage.append({"type": "mem", "name": None, "id": 2, "count": int(r["max_rss"]) * 1024})
    step_id = r["step"]
    return {
        "nodes": {"list": names, "count": len(names), "range": r.get("nodes")},
        "tres": {"requested": {"max": [], "min": [], "average": [], "total": usage},
                 "consumed": {"max": [], "min": [], "average": [], "total": []},
                 "allocated": _alloc_tres(r, step=True)},
        "time": {"elapsed": _elapsed(r, now), "end": _epoch(r.get("end")), "start": _epoch(r.get("start")),
                 "suspended": 0, "system": _cpu_time(0), "total": _cpu_time(r.get("total_cpu")),
                 "user": _cpu_time(r.get("total_cpu"))},
        "exit_code": _exit_code(r.get("exit_code", 0), r.get("exit_signal", 0), r.get("end") is None),
        "tasks": {"count": r.get("ntasks") or 1}, "pid": None,
        "CPU": {"requested_frequency": {"min": None, "max": None}, "governor": []},
        "kill_request_user": None, "state": r.get("state"),
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": 0}},
        "step": {"job_id": job["job_id"], "het": {"component": None},
                 "id": int(step_id) if str(step_id).isdigit() else step_id, "name": r.get("name")},
        "task": {"distribution": "Cyclic" if str(step_id) == "batch" else "Block"},
    }


def _sacct_job(r: dict, steps: list[dict], *, cluster: str | None, now: float | None) -> dict:
    array, _, task = (r.get("display_id") or "").partition("_")
    pending = r.get("state") == "PENDING"
    worst = derived_exit(steps)
    killer = _user_name(r["cancelled_by"]) if r.get("cancelled_by") is not None else None
    tasks = task[1:-1] if task.startswith("[") else None  # a pending array's record: 12_[1-3]
    return {
        "account": r.get("account"), "comment": {"administrator": None, "job": None, "system": None},
        "allocation_nodes": r.get("nnodes", 0) if r.get("start") else 0,
        "array": {"job_id": int(array) if task else 0, "limits": {"max": {"running": {"tasks": 0}}},
                  "task": tasks, "task_id": int(task) if task.isdigit() else None},
        "association": {"account": r.get("account"), "cluster": cluster, "partition": None, "user": r.get("user")},
        "cluster": cluster, "constraints": None, "container": None,
        "derived_exit_code": _exit_code(*worst, pending),
        "time": {"elapsed": _elapsed(r, now), "eligible": _epoch(r.get("eligible")), "end": _epoch(r.get("end")),
                 "start": _epoch(r.get("start")), "submission": _epoch(r.get("submit")), "suspended": 0,
                 "system": _cpu_time(0), "limit": _minutes(r.get("time_limit")),
                 "total": _cpu_time(r.get("total_cpu")), "user": _cpu_time(r.get("total_cpu"))},
        "exit_code": _exit_code(r.get("exit_code", 0), r.get("exit_signal", 0), pending),
        "flags": [] if pending or not r.get("start") else ["STARTED_ON_SCHEDULE"],
        "group": _primary_group(r.get("uid")), "het": {"job_id": r.get("het_job_id") or 0, "job_offset": r.get("het_job_offset")},
        "job_id": r["job_id"], "name": r.get("name"), "mcs": {"label": None},
        "nodes": r.get("nodes") or "None assigned", "partition": r.get("partition"), "priority": r.get("priority"),
        "qos": r.get("qos", "normal"), "required": {"CPUs": r.get("req_cpus", 0), "memory": max(r.get("req_mem") or 0, 0)},
        "kill_request_user": killer, "reservation": {"id": 0, "name": r.get("reservation") or 0},
        "state": {"current": r.get("state"), "reason": "None"},
        "steps": [_step_record(r, s, now) for s in steps],
        "tres": {"allocated": _alloc_tres(r, step=False), "requested": _req_tres(r)},
        "user": r.get("user"), "wckey": None, "working_directory": r.get("work_dir"),
    }


def sacct_document(records: list[dict], *, cluster: str | None = None, now: float | None = None) -> dict:
    """``sacct --json``: one entry per job record (each run of a requeued job with ``-D``), its
    steps (``batch``, ``0``, ...) nested under it, from ``GET /acct``'s records as sacct selects them."""
    jobs: dict[tuple, tuple[dict, list]] = {}
    for r in records:
        key = (r["job_id"], r.get("restart"))
        if r.get("step") in (None, ""):
            jobs.setdefault(key, (r, []))
            jobs[key] = (r, jobs[key][1])
        else:
            jobs.setdefault(key, (None, []))[1].append(r)
    return document(DB_PLUGIN, "jobs", [_sacct_job(job, steps, cluster=cluster, now=now)
                                        for job, steps in jobs.values() if job is not None])


# -- sshare --json ------------------------------------------------------------------------------------
def _number(x):
    return None if x is None or x == "inf" or (isinstance(x, float) and x != x) else x


def sshare_document(rows: list[dict], parents: dict | None = None, *, cluster: str | None = None) -> dict:
    """minislurm's ``sshare --json`` (sshare has none in 22.05): 23.11's share entries' names
    (``name``, ``parent``, ``shares``, ``usage``, ``fairshare.factor``, ``type``) with plain numbers,
    root's entry first, as sshare's table has it."""
    top = [r for r in rows if (r["account"] == "root" if r.get("user") else
                               (parents or {}).get(r["account"], "root") in (None, "root"))]
    out = [{"cluster": cluster, "name": "root", "parent": "", "partition": None, "shares_normalized": 0.0,
            "shares": None, "tres": {"run_seconds": [], "group_minutes": [], "usage": []}, "effective_usage": 1.0,
            "usage_normalized": 1.0, "usage": sum(r.get("raw_usage") or 0 for r in top),
            "fairshare": {"factor": None, "level": None}, "type": ["ASSOCIATION"]}]
    for r in rows:
        user = r.get("user")
        out.append({
            "cluster": cluster, "name": user or r["account"],
            "parent": r["account"] if user else (parents or {}).get(r["account"]) or "root",
            "partition": None, "shares_normalized": _number(r.get("norm_shares")), "shares": r.get("raw_shares"),
            "tres": {"run_seconds": [], "group_minutes": [], "usage": []},
            "effective_usage": _number(r.get("effective_usage")), "usage_normalized": _number(r.get("norm_usage")),
            "usage": _number(r.get("raw_usage")),
            "fairshare": {"factor": _number(r.get("fairshare")), "level": _number(r.get("level_fs"))},
            "type": ["USER"] if user else ["ASSOCIATION"],
        })
    return document(PLUGIN, "shares", out)
