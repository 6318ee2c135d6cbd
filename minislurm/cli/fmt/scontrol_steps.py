"""``scontrol show step[s] [JOBID[.STEP]]``: the running steps of running jobs, one record
each, in the layout of slurm_sprint_job_step_info (22.05):

    StepId=12.0 UserId=1000 StartTime=... TimeLimit=UNLIMITED
       State=RUNNING Partition=gpu NodeList=c[1-2]
       Nodes=2 CPUs=4 Tasks=4 Name=python Network=(null)
       TRES=cpu=4,gres/gpu=2,mem=4000M,node=2
       ResvPorts=(null)
       CPUFreqReq=Default Dist=Block
       SrunHost:Pid=(null):0

Built from the steps' accounting records (sacct's), which is all minislurm keeps of a step:
srun's host and pid are not kept (``(null):0``), and a step's time limit is the job's own
only when srun asks for one, which minislurm does not record (``UNLIMITED``).  A step request
waiting for the CPUs or GPUs its job's steps hold shows as ``StepId=12.TDB``, ``State=PENDING``,
``TRES=(null)`` (twin session step_gpus).
"""

from __future__ import annotations

from minislurm.cli.fmt.fields import mem_units
from minislurm.cli.fmt.scontrol import record, show_time


def step_id(rec: dict) -> str:
    """``12.0``, ``12.batch``, ``7_3.0`` (an array task by its array id)."""
    return f"{rec.get('display_id') or rec['job_id']}.{rec['step']}"


def _tres(rec: dict) -> str:
    """``cpu=1,gres/gpu=1,mem=1000M,node=1``: names in alphabetical order (22.05 on the twin)."""
    if rec["state"] == "PENDING":
        return "(null)"
    mem = rec.get("alloc_mem")
    if mem is None:
        mem = (rec.get("req_mem") or 0) * rec.get("nnodes", 1)
    items = {"cpu": rec.get("alloc_cpus", 0), "node": rec.get("nnodes", 1)}
    if mem > 0:
        items["mem"] = mem_units(mem)
    if rec.get("alloc_gpus"):
        items["gres/gpu"] = rec["alloc_gpus"]
    return ",".join(f"{k}={items[k]}" for k in sorted(items))


def show_step(rec: dict, job: dict) -> str:
    """One step record; ``rec`` its accounting record, ``job`` its job's view."""
    batch = rec["step"] in ("batch", "extern") or rec["state"] == "PENDING"
    return record([
        f"StepId={step_id(rec)} UserId={rec.get('uid', 0)} StartTime={show_time(rec.get('start'))} "
        f"TimeLimit=UNLIMITED",
        f"State={rec['state']} Partition={job.get('partition', '')} NodeList={rec.get('nodes', '')}",
        f"Nodes={rec.get('nnodes', 1)} CPUs={rec.get('alloc_cpus', 0)} Tasks={rec.get('ntasks') or 1} "
        f"Name={rec.get('name', '')} Network=(null)",
        f"TRES={_tres(rec)}",
        "ResvPorts=(null)",
        f"CPUFreqReq=Default Dist={'Unknown' if batch else 'Block'}",
        "SrunHost:Pid=(null):0"])
