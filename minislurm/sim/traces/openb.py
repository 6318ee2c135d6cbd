"""Alibaba's ``openb`` GPU pod list (cluster-trace-gpu-v2023, the FGD paper, USENIX ATC'23).

Columns: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time``.  A pod runs on exactly one node, so each pod is a one-node job.
The ``openb_pod_list_multigpu50.csv``-style files that lack the time columns cannot be replayed.
"""

from __future__ import annotations

import csv
import math
import re

from ._common import (Source, Tally, TraceJob, TraceReadResult, check_args, clamp_runtime,
                      csv_rows, finish, finite, open_lines)
from .estimate import DEFAULT_ESTIMATE, EstimateModel

REQUIRED = ("name", "cpu_milli", "memory_mib", "num_gpu", "creation_time", "deletion_time",
            "scheduled_time")
_TRAILING_DIGITS = re.compile(r"(\d+)$")


def read_openb(source: Source, *, cores_per_node: int, gpus_per_node: int,
               limit: int | None = None, estimate: EstimateModel | None = None) -> TraceReadResult:
    """Read an openb pod list: one node per pod.

    - GPUs = ``num_gpu``.  **A GPU-sharing pod (``num_gpu == 1``, ``gpu_milli < 1000``) is given
      one whole GPU**: Slurm's ``gres/gpu`` allocates whole devices (sharing needs ``gres/shard``
      or MPS, which TraceJob does not model).  Counted in ``notes``.
    - CPUs = ``ceil(cpu_milli / 1000)`` (at least 1); memory = ``memory_mib`` (Slurm's MB are MiB).
    - submit = ``creation_time``; runtime = ``deletion_time - scheduled_time``, or
      ``- creation_time`` for pods never scheduled (Pending in the trace: their "runtime" is
      the time until deletion; noted).  Pods still Running at the trace end keep the truncated
      runtime the trace gives.
    - no time limit in the trace: ``estimate`` (default EstimateModel()) supplies it.
    - skipped and counted: runtime <= 0, a pod larger than one node (more GPUs than
      ``gpus_per_node`` or CPUs than ``cores_per_node``), missing times, bad numbers.
    - ``gpu_spec`` (GPU type constraints) and ``qos`` are not carried over.
    - job id = the digits at the end of ``name`` (``openb-pod-0061`` -> 61), else the row number.
    """
    check_args(cores_per_node, gpus_per_node, limit)
    model = estimate or DEFAULT_ESTIMATE
    jobs: list[TraceJob] = []
    bad, notes = Tally(), Tally()
    with open_lines(source) as lines:
        rows = csv_rows(lines, bad, quoting=csv.QUOTE_NONE)
        header = next((r for _, r in rows if r), None)
        if header is None:
            return finish(jobs, bad, notes, "openb")
        col = {name.strip(): i for i, name in enumerate(header)}
        missing = [c for c in REQUIRED if c not in col]
        if missing:
            raise ValueError(f"openb pod list lacks column(s) {', '.join(missing)}; "
                             "files without times cannot be replayed")
        i_name, i_cpu, i_mem = col["name"], col["cpu_milli"], col["memory_mib"]
        i_gpu = col["num_gpu"]
        i_milli = col.get("gpu_milli")
        i_create, i_delete, i_sched = (col["creation_time"], col["deletion_time"],
                                       col["scheduled_time"])
        width = len(header)
        for line_no, row in rows:
            if limit is not None and len(jobs) >= limit:
                break
            if not row:
                continue
            if len(row) != width:
                bad.add(f"wrong field count (expected {width})", line_no)
                continue
            try:
                cpu_milli, mem = float(row[i_cpu]), int(float(row[i_mem]))
                num_gpu = int(float(row[i_gpu]))
                gpu_milli = float(row[i_milli]) if i_milli is not None and row[i_milli] else 0.0
                created = float(row[i_create])
                deleted = float(row[i_delete]) if row[i_delete] else None
                scheduled = float(row[i_sched]) if row[i_sched] else None
            except (ValueError, OverflowError):
                bad.add("non-numeric field", line_no)
                continue
            if deleted is None:
                bad.add("no deletion time", line_no)
                continue
            if not finite(cpu_milli, gpu_milli, created, deleted, scheduled or 0.0):
                bad.add("non-numeric field", line_no)
                continue
            if created < 0 or cpu_milli < 0 or mem < 0 or num_gpu < 0:
                bad.add("negative value", line_no)
                continue
            start = created if scheduled is None else scheduled
            runtime = deleted - start
            if runtime <= 0:
                bad.add("runtime <= 0", line_no)
                continue
            shared = num_gpu == 1 and 0 < gpu_milli < 1000
            gpus = 1 if num_gpu == 0 and gpu_milli > 0 else num_gpu
            cpus = max(1, math.ceil(cpu_milli / 1000))
            if gpus > gpus_per_node:
                bad.add(f"pod needs more GPUs than a node has ({gpus_per_node})", line_no)
                continue
            if cpus > cores_per_node:
                bad.add(f"pod needs more CPUs than a node has ({cores_per_node})", line_no)
                continue
            if scheduled is None:
                notes.add("never scheduled (Pending): runtime = deletion - creation", line_no)
            if shared:
                notes.add("GPU-sharing pod (gpu_milli < 1000) given one whole GPU", line_no)
            elif gpus != num_gpu:
                notes.add("gpu_milli > 0 with num_gpu 0: given one whole GPU", line_no)
            m = _TRAILING_DIGITS.search(row[i_name].strip())
            job_id = int(m.group(1)) if m else line_no
            time_limit = model.limit_for(runtime)
            runtime = clamp_runtime(runtime, time_limit, notes, line_no)
            jobs.append(TraceJob(job_id, created, runtime, time_limit, 1, cpus, gpus,
                                 mem_per_node=mem))
    return finish(jobs, bad, notes, "openb")
