"""``scontrol show step[s] [JOBID[.STEP]]``: the running steps of running jobs, one record
each, in the layout of slurm_sprint_job_step_info (22.05):

    StepId=12.0 UserId=1000 StartTime=... TimeLimit=UNLIMITED
       State=RUNNING Partition=gpu NodeList=c[1-2]
       Nodes=2 CPUs=4 Tasks=4 Name=python Network=(null)
       TRES=cpu=4,mem=4000M,node=2,gres/gpu=2
       ResvPorts=(null)
       CPUFreqReq=Default Dist=Block
       SrunHost:Pid=(null):0

Built from the steps' accounting records (sacct's), which is all minislurm keeps of a step:
srun's host and pid are not kept (``(null):0``), and a step's time limit is the job's own
only when srun asks for one, which minislurm does not record (``UNLIMITED``).
"""

from __future__ import annotations

from minislurm.cli.fmt.fields import mem_units
from minislurm.cli.fmt.scontrol import record, show_time


def step_id(rec: dict) -> str:
    """``12.0``, ``12.batch``, ``7_3.0`` (an array task by its array id)."""
    return f"{rec.get('display_id') or rec['job_id']}.{rec['step']}"


def _tres(rec: dict, mem_per_node: float) -> str:
    parts = [f"cpu={rec.get('alloc_cpus', 0)}"]
    if mem_per_node > 0:
        parts.append(f"mem={mem_units(mem_per_node * rec.get('nnodes', 1))}")
    parts.append(f"node={rec.get('nnodes', 1)}")
    if rec.get("alloc_gpus"):
        parts.append(f"gres/gpu={rec['alloc_gpus']}")
    return ",".join(parts)


def show_step(rec: dict, job: dict) -> str:
    """One step record; ``rec`` its accounting record, ``job`` its job's view."""
    batch = rec["step"] in ("batch", "extern")
    return record([
        f"StepId={step_id(rec)} UserId={rec.get('uid', 0)} StartTime={show_time(rec.get('start'))} "
        f"TimeLimit=UNLIMITED",
        f"State={rec['state']} Partition={job.get('partition', '')} NodeList={rec.get('nodes', '')}",
        f"Nodes={rec.get('nnodes', 1)} CPUs={rec.get('alloc_cpus', 0)} Tasks={rec.get('ntasks') or 1} "
        f"Name={rec.get('name', '')} Network=(null)",
        f"TRES={_tres(rec, rec.get('req_mem') or 0)}",
        "ResvPorts=(null)",
        f"CPUFreqReq=Default Dist={'Unknown' if batch else 'Block'}",
        "SrunHost:Pid=(null):0"])
