"""RFold's Philly-derived GPU trace (and RFold's Alibaba conversion, which shares the schema).

Columns: ``job id, arrival time (sec), topology, shape, size, duration (sec)``; ``size`` is the
GPU count.  ``topology``/``shape`` record where Philly placed the job on its own 2- and 8-GPU
servers; they are ignored: jobs are re-packed onto the simulated node shape.
"""

from __future__ import annotations

import csv
import math

from ._common import (Source, Tally, TraceJob, TraceReadResult, check_args, clamp_runtime,
                      csv_rows, finish, finite, gpu_share_cpus, open_lines)
from .estimate import DEFAULT_ESTIMATE, EstimateModel

PHILLY_COLUMNS = 6


def read_philly(source: Source, *, cores_per_node: int, gpus_per_node: int,
                limit: int | None = None, estimate: EstimateModel | None = None) -> TraceReadResult:
    """Read the Philly CSV, packing each job onto as few ``gpus_per_node``-GPU nodes as it needs.

    - ``size <= gpus_per_node``: one node with ``size`` GPUs; otherwise
      ``ceil(size / gpus_per_node)`` whole nodes (a size that is not a multiple is rounded up to
      whole nodes, as TraceJob asks the same of every node; counted in ``notes``).
    - fractional sizes (RFold's Alibaba file has 0.46 etc.) round up to whole GPUs (noted).
    - CPUs per node in proportion to GPUs: ``cores_per_node * gpus / gpus_per_node``, at least 1.
    - no time limit in the trace: ``estimate`` (default EstimateModel()) supplies it.
    - skipped and counted: duration <= 0, size <= 0, negative arrival, wrong column count,
      non-numeric values.  Lines starting with ``#`` (the header) are not data.
    """
    check_args(cores_per_node, gpus_per_node, limit)
    if gpus_per_node < 1:
        raise ValueError("the Philly trace is a GPU trace: gpus_per_node must be >= 1")
    model = estimate or DEFAULT_ESTIMATE
    jobs: list[TraceJob] = []
    bad, notes = Tally(), Tally()
    with open_lines(source) as lines:
        for line_no, row in csv_rows(lines, bad, quoting=csv.QUOTE_NONE):
            if limit is not None and len(jobs) >= limit:
                break
            if not row or row[0].lstrip().startswith("#"):
                continue
            if len(row) != PHILLY_COLUMNS:
                bad.add(f"wrong field count (expected {PHILLY_COLUMNS})", line_no)
                continue
            try:
                job_id = int(float(row[0]))
                arrival, size, duration = float(row[1]), float(row[4]), float(row[5])
            except (ValueError, OverflowError):
                bad.add("non-numeric field", line_no)
                continue
            if not finite(arrival, size, duration):
                bad.add("non-numeric field", line_no)
                continue
            if arrival < 0:
                bad.add("negative arrival time", line_no)
                continue
            if duration <= 0:
                bad.add("duration <= 0", line_no)
                continue
            if size <= 0:
                bad.add("size (GPUs) <= 0", line_no)
                continue
            gpus = math.ceil(size)
            if gpus != size:
                notes.add("fractional GPU size rounded up to whole GPUs", line_no)
            if gpus <= gpus_per_node:
                nodes, per_node = 1, gpus
            else:
                nodes, per_node = math.ceil(gpus / gpus_per_node), gpus_per_node
                if gpus % gpus_per_node:
                    notes.add("size not a multiple of gpus_per_node, rounded up to whole nodes",
                              line_no)
            time_limit = model.limit_for(duration)
            duration = clamp_runtime(duration, time_limit, notes, line_no)
            jobs.append(TraceJob(job_id, arrival, duration, time_limit, nodes,
                                 gpu_share_cpus(per_node, gpus_per_node, cores_per_node), per_node))
    return finish(jobs, bad, notes, "philly")
