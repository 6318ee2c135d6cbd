"""What the API tells clients about jobs and nodes: the core views plus what only the live
cluster knows (output paths, the planned start, the dependency's state, agents' addresses,
who set a node's reason), so squeue, scontrol and sinfo can print what Slurm's do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minislurm.core.hostlist import compress
from minislurm.core.patterns import expand_pattern
from minislurm.core.views import job_view, node_view
from minislurm.ctld.jobs import dependency_text

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def full_job(ctl: "Controller", job) -> dict:
    live = ctl.live[job.job_id]
    extra = {"work_dir": live.work_dir, "command": live.command, "batch": live.batch, "uid": live.uid,
             "gid": live.gid, "qos": "normal", "submit_host": live.submit_host,
             "array_max_tasks": job.array_max_running,
             "ntasks_per_node": getattr(job.spec, "ntasks_per_node", None) or 0,
             "expected_start": ctl.expected.get(job.job_id),
             "dependency": dependency_text(job, ctl.state.jobs),
             "sched_nodes": compress(ctl.state.nodes.names[n] for n in ctl.sched_nodes.get(job.job_id, ()))}
    for key, pattern in (("stdout", live.stdout), ("stderr", live.stderr or live.stdout)):
        if live.batch and pattern:
            node = ctl.state.nodes.names[job.alloc.nodes[0]] if job.alloc else ""
            extra[key] = expand_pattern(pattern if pattern.startswith("/") else f"{live.work_dir}/{pattern}",
                                        job_id=job.job_id, job_name=job.name, user=job.user,
                                        array_job_id=job.array_job_id, array_task_id=job.array_task_id,
                                        node=node, restart_count=job.restart_count)
    return job_view(job, ctl.state, extra)


def node_views(ctl: "Controller") -> list[dict]:
    parts_of: dict[str, list[str]] = {}
    for p in ctl.state.partitions.values():
        for n in p.nodes:
            parts_of.setdefault(n, []).append(p.name)
    out = []
    for n, name in enumerate(ctl.state.nodes.names):
        view = node_view(ctl.state, n, parts_of.get(name, []))
        addr = ctl.agents[name].addr
        view["addr"] = addr.rsplit(":", 1)[0] if addr else None
        view["slurmd_start_time"] = ctl.agents[name].boot_time or None
        view["boot_time"] = ctl.agents[name].os_boot_time or None
        if ctl.agents[name].reason_set and view["reason"]:
            view["reason_user"], view["reason_time"] = ctl.agents[name].reason_set
        if not ctl.agents[name].registered and not ctl.state.nodes.down[n] and addr is None:
            view["state"] = "unk"  # never heard of; a restarted controller shows saved states (with *)
        out.append(view)
    return out
