"""Standard Workload Format (Parallel Workloads Archive) logs, and Alea's ``.machines`` files.

SWF: one job per line, 18 whitespace-separated fields, ``;`` header comments, -1 = unknown:
 1 job  2 submit  3 wait  4 run time  5 allocated procs  6 avg CPU  7 used mem  8 requested procs
 9 requested time  10 requested mem  11 status  12 user  13 group  14 executable  15 queue
 16 partition  17 preceding job  18 think time.
Alea's extended SWF (``wagap-2013.swf``) appends node lists, queue name and PBS spec after field
18; those extra fields are ignored.  Wait time is not used: the simulator computes its own.
"""

from __future__ import annotations

import math
from pathlib import Path

from ._common import (Source, Tally, TraceJob, TraceReadResult, check_args, clamp_runtime,
                      finish, finite, open_lines)
from .estimate import DEFAULT_ESTIMATE, EstimateModel

SWF_FIELDS = 18


def read_swf(source: Source, *, cores_per_node: int, gpus_per_node: int = 0,
             limit: int | None = None, estimate: EstimateModel | None = None) -> TraceReadResult:
    """Read an SWF log and map processors onto nodes of ``cores_per_node`` cores.

    - processors: allocated (field 5), or requested (field 8) when allocated is -1;
      ``nodes = ceil(procs / cores_per_node)``, ``cpus_per_node = ceil(procs / nodes)``.
    - time limit: requested time (field 9) when > 0, else ``estimate`` (default EstimateModel()).
    - **runtime above the limit is clamped to the limit.**  Real Slurm (OverTimeLimit=0) kills a
      job at its limit, so the longer run cannot happen in a Slurm replay; the source scheduler
      (e.g. MAUI at HPC2N) allowed some grace.  ``result.clamped`` counts them.
    - skipped and counted: runtime <= 0 (cancelled before start, or unknown), procs <= 0, unknown
      submit time, too few fields, non-numeric fields.
    - user/account become ``u<uid>``/``g<gid>``; SWF partition numbers are not mapped (they name
      the source machine's partitions, not the simulated ones); memory is not tracked, because
      archives disagree on its unit (field 10 is KB/proc in SWF 2.2 but bytes in Alea's files).
    - ``limit``: stop after this many usable jobs (in file order; SWF is submit-ordered).
    SWF jobs use no GPUs; ``gpus_per_node`` is accepted for a uniform signature.
    """
    check_args(cores_per_node, gpus_per_node, limit)
    model = estimate or DEFAULT_ESTIMATE
    jobs: list[TraceJob] = []
    bad, notes = Tally(), Tally()
    with open_lines(source) as lines:
        for line_no, line in enumerate(lines, 1):
            if limit is not None and len(jobs) >= limit:
                break
            text = line.strip()
            if not text or text.startswith(";"):
                continue
            f = text.split()
            if len(f) < SWF_FIELDS:
                bad.add(f"wrong field count (expected {SWF_FIELDS})", line_no)
                continue
            try:
                job_id = int(f[0])
                submit, run, req_time = float(f[1]), float(f[3]), float(f[8])
                alloc, req_procs = int(float(f[4])), int(float(f[7]))
                uid, gid = int(float(f[11])), int(float(f[12]))
            except (ValueError, OverflowError):
                bad.add("non-numeric field", line_no)
                continue
            if not finite(submit, run, req_time):
                bad.add("non-numeric field", line_no)
                continue
            if submit < 0:
                bad.add("unknown submit time", line_no)
                continue
            if run <= 0:
                bad.add("runtime <= 0 (cancelled before start or unknown)", line_no)
                continue
            procs = alloc if alloc > 0 else req_procs
            if procs <= 0:
                bad.add("processor count <= 0 (cancelled before start or unknown)", line_no)
                continue
            nodes = math.ceil(procs / cores_per_node)
            cpus = math.ceil(procs / nodes)
            time_limit = req_time if req_time > 0 else model.limit_for(run)
            run = clamp_runtime(run, time_limit, notes, line_no)
            jobs.append(TraceJob(job_id, submit, run, time_limit, nodes, cpus, 0,
                                 user=f"u{uid}" if uid >= 0 else "user",
                                 account=f"g{gid}" if gid >= 0 else "default"))
    return finish(jobs, bad, notes, "swf")


def read_machines(path: str | Path) -> list[tuple[str, int, int]]:
    """Alea's ``<trace>.swf.machines``: ``id name nodes cpus_per_node ...`` -> (name, nodes, cpus).

    Lines that do not parse are ignored; e.g. HPC2N's file says ``0 seth 120 2 1 1048576``:
    120 dual-CPU nodes (the 240 processors of the SWF header).
    """
    machines: list[tuple[str, int, int]] = []
    with open_lines(path) as lines:
        for line in lines:
            f = line.split()
            if len(f) < 4 or f[0].startswith((";", "#")):
                continue
            try:
                machines.append((f[1], int(f[2]), int(f[3])))
            except (ValueError, OverflowError):
                continue
    return machines
