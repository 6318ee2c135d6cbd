"""The running steps of running jobs, for the commands that list them (``scontrol show step``,
``squeue -s``): read from the steps' accounting records, which is all minislurm keeps of a step."""

from __future__ import annotations

from minislurm.client import Client

_FIRST = {"batch": -2, "extern": -1}  # Slurm lists a job's batch and extern steps before its sruns


def running_steps(client: Client, jobs: list[dict], step: str = "") -> tuple[dict[int, dict], list[dict]]:
    """Of ``jobs`` (the controller's job views), the running ones by id, and their running
    steps' records (only ``step`` with one), in job order and each job's step order; a step
    request waiting for its job's CPUs or GPUs comes last, as 22.05's ``J.TDB``, PENDING."""
    running = {j["job_id"]: j for j in jobs if j.get("state") == "RUNNING"}
    records = client.call("GET", "/acct", query={"jobs": ",".join(map(str, running))})["records"] if running else []
    records += [_pending(job, p) for job in running.values() for p in job.get("pending_steps", ())]
    steps = [r for r in records if r["step"] is not None and r["state"] in ("RUNNING", "PENDING")
             and r["job_id"] in running
             and r.get("restart", 0) == running[r["job_id"]].get("restart_count", r.get("restart", 0))
             and (not step or r["step"] == step)]
    steps.sort(key=lambda r: (r["job_id"], _FIRST.get(r["step"], 0),
                              int(r["step"]) if r["step"].isdigit() else 1 << 32))
    return running, steps


def _pending(job: dict, request: dict) -> dict:
    """A waiting step request as a step record: no id yet (``TDB``), no name, on the job's nodes."""
    return {"job_id": job["job_id"], "display_id": job.get("display_id"), "step": "TDB", "state": "PENDING",
            "uid": job.get("uid", 0), "start": None, "nodes": job.get("nodes", ""), "nnodes": request["nodes"],
            "alloc_cpus": request["cpus"], "ntasks": request["ntasks"], "name": "(null)",
            "restart": job.get("restart_count", 0)}
