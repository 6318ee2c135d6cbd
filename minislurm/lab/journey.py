"""One batch job's path through Slurm's parts, on a time axis, from what a live run recorded.

Chapter 1 submits :data:`SCRIPT` (two nodes, two tasks on each) and follows it: :func:`follow`
times ``sbatch`` itself, then reads the controller's records of the job and of its step (what
``sacct`` shows, to the microsecond) and the times the script and its tasks printed
(``date +%s.%N``: the cluster's nodes share one clock).  :func:`journey_figure` draws them as a
sequence diagram with time running to the right: one lane per part, an arrow for each request,
named as Slurm names it (its sdiag and logs print these names).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from minislurm.lab.figures import LabFigure
from minislurm.lab.timeline import Message, Span, lanes_figure

SCRIPT = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
echo "script starts on $SLURMD_NODENAME at $(date +%s.%N)"
srun bash -c 'echo "task $SLURM_PROCID starts on $SLURMD_NODENAME at $(date +%s.%N)"
              sleep 1
              echo "task $SLURM_PROCID ends at $(date +%s.%N)"'
echo "script ends at $(date +%s.%N)"
"""
SRUN = "srun (in the script)"
_PRINTED = re.compile(r"^(script|task (\d+)) (starts|ends)(?: on (\S+))? at (\d+\.\d+)$", re.M)


@dataclass(frozen=True)
class Journey:
    """Times (seconds since the epoch) of one run of :data:`SCRIPT`.

    ``sbatch``: the command's start and return, as the page timed it; ``submit``, ``start``,
    ``end`` and ``step`` (its first srun's start and end): the controller's records;
    ``script`` and ``tasks`` (rank -> node, start, end): what they printed."""

    job: int
    state: str
    nodes: str
    sbatch: tuple[float, float]
    submit: float
    start: float
    end: float
    step: tuple[float, float]
    script_node: str
    script: tuple[float, float]
    tasks: dict[int, tuple[str, float, float]]


def read_output(text: str) -> tuple[str, tuple[float, float], dict[int, tuple[str, float, float]]]:
    """The script's node, its start and end, and each task's node, start and end, from its output."""
    starts, ends, where = {}, {}, {}
    for _, rank, event, node, when in _PRINTED.findall(text):
        key = int(rank) if rank else "script"
        (starts if event == "starts" else ends)[key] = float(when)
        if node:
            where[key] = node
    tasks = {r: (where[r], starts[r], ends[r]) for r in sorted(k for k in starts if k != "script")}
    return where["script"], (starts["script"], ends["script"]), tasks


def follow(sh, command: str) -> Journey:
    """Run ``command`` (an sbatch of :data:`SCRIPT`) on the terminal ``sh``, timed, wait for
    the job to end and gather what every part recorded of it."""
    before = time.time()
    job = sh.submit(command)
    after = time.time()
    sh.wait(job)
    records = sh.api.call("GET", "/acct", query={"jobs": str(job)})["records"]
    line = next(r for r in records if r["step"] is None)
    step = next(r for r in records if r["step"] == "0")
    node, script, tasks = read_output(sh.read(f"slurm-{job}.out"))
    return Journey(job, line["state"], line["nodes"], (before, after), line["submit"], line["start"], line["end"],
                   (step["start"], step["end"]), node, script, tasks)


def journey_figure(j: Journey, title: str = "") -> LabFigure:
    """The run as a sequence diagram: lanes for sbatch, slurmctld, srun, and each node's slurmd
    and tasks; arrows for the requests between them, drawn from the moment the sender's record
    says it sent one to the moment the receiver's first record of it."""
    nodes = list(dict.fromkeys(n for n, _, _ in j.tasks.values()))
    on = {n: [(r, s, e) for r, (m, s, e) in j.tasks.items() if m == n] for n in nodes}
    first = {n: min(s for _, s, _ in on[n]) for n in nodes}
    last = {n: max(e for _, _, e in on[n]) for n in nodes}
    lanes = {"sbatch": [Span(*j.sbatch, "RUNNING", "sbatch")],
             "slurmctld": [Span(j.submit, j.start, "PENDING"), Span(j.start, j.end, "RUNNING", f"job {j.job} on {j.nodes}")]}
    for n in nodes:
        lanes[f"slurmd {n}"] = [Span(*j.script, "RUNNING", "batch script")] if n == j.script_node else []
        if n == j.script_node:
            lanes[SRUN] = [Span(*j.step, "RUNNING", f"srun: step {j.job}.0")]
        lanes[f"tasks on {n}"] = [Span(first[n], last[n], "RUNNING", "tasks " + ", ".join(str(r) for r, _, _ in on[n]))]
    messages = [Message(j.submit, "sbatch", j.submit, "slurmctld", "REQUEST_SUBMIT_BATCH_JOB"),
                Message(j.start, "slurmctld", j.script[0], f"slurmd {j.script_node}", "REQUEST_BATCH_JOB_LAUNCH"),
                Message(j.step[0], SRUN, j.step[0], "slurmctld", "REQUEST_JOB_STEP_CREATE")]
    messages += [Message(j.step[0], SRUN, first[n], f"slurmd {n}", "REQUEST_LAUNCH_TASKS") for n in nodes]
    messages += [Message(last[n], f"tasks on {n}", last[n], SRUN, "MESSAGE_TASK_EXIT", reply=True) for n in nodes]
    messages += [Message(j.step[1], SRUN, j.step[1], "slurmctld", "REQUEST_STEP_COMPLETE"),
                 Message(j.script[1], f"slurmd {j.script_node}", j.end, "slurmctld", "REQUEST_COMPLETE_BATCH_SCRIPT")]
    return lanes_figure(lanes, ends={"slurmctld": j.state}, messages=messages, unit=0.001,
                        unit_name="milliseconds since sbatch started", title=title)
