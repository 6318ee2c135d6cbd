"""jobstats' report: what a job used against what it asked for, per node and per task.

:func:`collect` turns a job's accounting rows (the job line with its allocation per node, and
its steps with what each used on each node, per task and per GPU: see
:mod:`minislurm.ctld.accounting`) into the report, the same data ``jobstats --json`` prints;
:func:`render` writes it for people; :func:`advice` says how to ask for less (or more) next
time, from the figures alone.

How the figures add up, as Slurm's accounting counts them: a node's CPU time is its steps'
(the batch script's included) added up; its memory is the largest peak of one step there, as
seff takes the largest MaxRSS (steps that run at the same time are not added: the figure is a
floor).  "Cores used" is CPU time over wall time: 1.5 means one and a half cores kept busy on
average.  A GPU's figures come from the longest step that held it (on the first node, the batch
step, which spans the job), and only from a real GPU: on fake ones the report says so.
"""

from __future__ import annotations

import math
import textwrap

from minislurm.cli.fmt.fields import kib_text
from minislurm.core.timefmt import format_elapsed

LOW = 0.5  # under half of what was asked for is worth asking less
MARGIN = 1.25  # advice keeps a quarter to spare over what was used


def _ratio(used: float, asked: float) -> float | None:
    return used / asked if asked else None


def collect(rows: list[dict], now: float, live: dict[str, dict] | None = None) -> dict:
    """The report of one job from its accounting rows; ``live``: step name -> its nodes'
    figures so far (``/jobs/N/usage``), for the steps of a running job."""
    job = next(r for r in rows if r["step"] is None)
    steps = [r for r in rows if r["step"] is not None]
    end = job.get("end") or now
    elapsed = end - job["start"] if job.get("start") else 0.0
    limit = job.get("time_limit")
    report = {"job_id": job["job_id"], "name": job["name"], "user": job["user"], "account": job.get("account"),
              "partition": job.get("partition"), "state": job["state"], "exit_code": job.get("exit_code", 0),
              "nodes": job.get("nodes"), "elapsed": round(elapsed, 3), "time_limit": limit,
              "time_used": _ratio(elapsed, limit), "cpus": job.get("alloc_cpus") or 0,
              "per_node": [], "per_task": []}
    used, durations = {}, {}  # step -> node -> figures; step -> its wall time
    for s in steps:
        figures = s.get("node_usage") or (live or {}).get(s["step"], {})
        used[s["step"]] = figures
        s_elapsed = durations[s["step"]] = (s.get("end") or now) - s["start"] if s.get("start") else 0.0
        per_task_cpus = (s.get("alloc_cpus") or 0) / max(s.get("ntasks") or 1, 1)
        for node, u in figures.items():
            for task, t in sorted(u.get("tasks", {}).items(), key=lambda kv: int(kv[0])):
                report["per_task"].append({
                    "step": s["step"], "task": int(task), "node": node, "elapsed": round(s_elapsed, 3),
                    "cpus": per_task_cpus, "cpu": t["cpu"], "cores_used": _ratio(t["cpu"], s_elapsed),
                    "rss": t["rss"]})
    for a in job.get("alloc_nodes") or []:
        node = a["node"]
        here = {step: f[node] for step, f in used.items() if node in f}
        cpu = sum(u["cpu"] for u in here.values())
        rss = max((u["rss"] for u in here.values()), default=0)
        row = {"node": node, "cpus": a["cpus"], "cpu": round(cpu, 3), "cores_used": _ratio(cpu, elapsed),
               "mem_req": a["mem"] * 1024, "rss": rss, "mem_used": _ratio(rss, a["mem"] * 1024), "gpus": [],
               "gpu_note": None}
        if a["gpus"]:
            row["gpus"], row["gpu_note"] = _gpus(a["gpus"], here, durations)
        report["per_node"].append(row)
    report["per_task"].sort(key=lambda t: (t["step"] != "batch", int(t["step"]) if t["step"].isdigit() else 0,
                                           t["task"]))
    report["total_cpu"] = round(sum(n["cpu"] for n in report["per_node"]), 3)
    report["cores_used"] = _ratio(report["total_cpu"], elapsed)
    report["advice"] = advice(report) if job["state"] not in ("PENDING", "RUNNING") else []
    return report


def _gpus(indices: list[int], here: dict[str, dict], durations: dict[str, float]) -> tuple[list[dict], str | None]:
    """The node's GPUs as the longest step that held them measured them, or why nobody did."""
    for step in sorted(here, key=lambda s: -durations.get(s, 0.0)):
        u = here[step]
        if "gpus" in u:
            return [{"index": i, **u["gpus"][str(i)]} for i in indices if str(i) in u["gpus"]], None
        if "gpu_note" in u:
            return [{"index": i} for i in indices], u["gpu_note"]
    return [{"index": i} for i in indices], "no step ran here"


def advice(r: dict) -> list[str]:
    """What to ask for next time, in words, from the report's figures (a finished job's)."""
    out = []
    tasks = [t for t in r["per_task"] if t["step"] != "batch"] or r["per_task"]  # the batch script's if alone
    busiest = max(tasks, key=lambda t: t["cores_used"] or 0.0, default=None)
    if busiest and None not in (busiest["cores_used"], r["cores_used"]) and r["cores_used"] < LOW * r["cpus"]:
        want = max(1, math.ceil(busiest["cores_used"] * MARGIN))
        if want < busiest["cpus"]:
            out.append(f"CPU: it kept {r['cores_used']:.2f} of its {r['cpus']} cores busy on average, its busiest "
                       f"task {busiest['cores_used']:.2f} of {busiest['cpus']:g}: --cpus-per-task={want} would do, "
                       "and a smaller job starts sooner.")
    peak = max((n["rss"] for n in r["per_node"]), default=0)
    asked = max((n["mem_req"] for n in r["per_node"]), default=0)
    want_mb = max(1, math.ceil(peak * MARGIN / 1024))
    if r["per_node"] and not asked:
        out.append(f"Memory: it asked for none; its largest peak on a node was {kib_text(peak)}: "
                   f"--mem={want_mb}M keeps a quarter to spare.")
    elif asked and peak < LOW * asked:
        out.append(f"Memory: its largest peak on a node was {kib_text(peak)} of the {kib_text(asked)} it asked "
                   f"for: --mem={want_mb}M keeps a quarter to spare and leaves the rest to other jobs.")
    if r["time_limit"] and r["elapsed"] < LOW * r["time_limit"]:
        minutes = max(1, math.ceil(r["elapsed"] * MARGIN / 60))
        out.append(f"Time: it ran {format_elapsed(r['elapsed'])} of its {format_elapsed(r['time_limit'])} limit: "
                   f"--time={minutes} keeps a quarter to spare, and a shorter limit lets backfill start it sooner.")
    for n in r["per_node"]:
        for g in n["gpus"]:
            if "util" in g and g["util"] < 100 * LOW:
                out.append(f"GPU: GPU {g['index']} on {n['node']} was busy {g['util']:.0f}% of the time: feed it "
                           "faster (more data-loader workers, a larger batch) or ask for fewer GPUs.")
    return out or ["What it asked for fits what it used."]


def _share(used: float | None) -> str:
    return "" if used is None else f" ({100 * used:.1f}%)"


def render(r: dict) -> str:
    """The report as jobstats prints it: the job, each node, each task, each GPU, advice."""
    lines = [f"Job {r['job_id']} ({r['name']}): {r['state']}"
             + ("" if r["state"] in ("PENDING", "RUNNING") else f", exit code {r['exit_code']}"),
             f"  User/Account: {r['user']}/{r['account']}    Partition: {r['partition']}",
             f"  Nodes: {r['nodes']}    CPU cores: {r['cpus']}",
             f"  Wall time: {format_elapsed(r['elapsed'])} of a "
             f"{format_elapsed(r['time_limit']) if r['time_limit'] else 'UNLIMITED'} limit{_share(r['time_used'])}"]
    if r["state"] == "PENDING":
        return "\n".join(lines + ["  It has not run yet: nothing to report."]) + "\n"
    if r["cores_used"] is not None:
        share = _share(_ratio(r["cores_used"], r["cpus"]))
        lines.append(f"  CPU cores used: {r['cores_used']:.2f} of {r['cpus']}{share}")
    lines += ["", "Per node                        CPU cores used/allocated      memory peak/requested"]
    for n in r["per_node"]:
        cores = "-" if n["cores_used"] is None else (f"{n['cores_used']:.2f} of {n['cpus']}"
                                                     + _share(_ratio(n["cores_used"], n["cpus"])))
        mem = kib_text(n["rss"]) + (f" of {kib_text(n['mem_req'])}{_share(n['mem_used'])}" if n["mem_req"]
                                    else " (no memory requested)")
        lines.append(f"  {n['node']:<29} {cores:<29} {mem}")
    gpus = [(n["node"], g, n["gpu_note"]) for n in r["per_node"] for g in n["gpus"]]
    if gpus:
        lines += ["", "Per GPU                         utilisation (mean)            memory peak/total"]
        for node, g, note in gpus:
            where = f"{node} GPU {g['index']}"
            if "util" in g:
                util = f"{g['util']:.1f}%"
                lines.append(f"  {where:<29} {util:<29} {kib_text(g['mem'])} of {kib_text(g['total'])}")
            else:
                lines.append(f"  {where:<29} not measured: {note}")
    if r["per_task"]:
        lines += ["", "Per task           on node      CPU cores used/allocated      memory peak"]
        for t in r["per_task"]:
            where = f"{r['job_id']}.{t['step']} task {t['task']}"
            cores = "-" if t["cores_used"] is None else (f"{t['cores_used']:.2f} of {t['cpus']:g}"
                                                         + _share(_ratio(t["cores_used"], t["cpus"])))
            lines.append(f"  {where:<16} {t['node']:<12} {cores:<29} {kib_text(t['rss'])}")
    if r["state"] == "RUNNING":
        lines += ["", "It is still running: these are the figures so far."]
    elif r["advice"]:
        lines += ["", "Right-sizing"]
        lines += [textwrap.fill(a, 80, initial_indent="  * ", subsequent_indent="    ") for a in r["advice"]]
    return "\n".join(lines) + "\n"
