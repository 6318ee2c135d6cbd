"""seff: how well a finished job used what it asked for (CPU and memory efficiency).

``seff`` is one of Slurm's contributed tools (``contribs/seff``, shipped by most sites, not
installed on the 22.05 twin); it reads the job's accounting record the way ``sacct -j N -o
TotalCPU,Elapsed,AllocCPUS,MaxRSS,ReqMem`` shows it and prints the same lines: CPU Utilized
is the job's TotalCPU, CPU Efficiency that over Elapsed x cores, Memory Utilized the largest
MaxRSS of its steps, over the memory it asked for.  minislurm measures CPU and memory by
sampling /proc (see :mod:`minislurm.slurmd.usage`).
"""

from __future__ import annotations

import sys
import time

from minislurm.cli.fmt.fields import kib_text
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser
from minislurm.client import Client, ClientError
from minislurm.core.timefmt import format_elapsed


def report(rows: list[dict], now: float) -> str:
    """The seff text for one job's accounting rows (the job line and its steps)."""
    job = next(r for r in rows if r["step"] is None)
    steps = [r for r in rows if r["step"] is not None]
    state = job["state"]
    end = job.get("end") or now
    elapsed = int(end - job["start"]) if job.get("start") else 0
    cores = job.get("alloc_cpus") or 0
    cpu = job.get("total_cpu") or 0.0
    rss = max((r.get("max_rss") or 0 for r in steps), default=0)
    lines = [f"Job ID: {job['job_id']}", f"User/Group: {job['user']}/{job['user']}",
             f"State: {state}" if state in ("PENDING", "RUNNING")
             else f"State: {state} (exit code {job.get('exit_code', 0)})"]
    # As contribs/seff: a job with no cores allocated yet (pending) counts one; one core is
    # "Cores: 1", more are given per node, even on a single node.
    cores = cores or 1
    nodes = job.get("nnodes") or 1
    if cores == 1:
        lines.append("Cores: 1")
    else:
        lines += [f"Nodes: {nodes}", f"Cores per node: {cores // nodes}"]
    if state == "PENDING":  # nothing has run: seff reports no efficiency at all
        return "\n".join(lines + ["Efficiency not available for jobs in the PENDING state."]) + "\n"
    walltime = elapsed * cores
    lines += [f"CPU Utilized: {format_elapsed(int(cpu))}",
              f"CPU Efficiency: {100 * cpu / walltime if walltime else 0:.2f}% of {format_elapsed(walltime)} "
              "core-walltime",
              f"Job Wall-clock time: {format_elapsed(elapsed)}",
              f"Memory Utilized: {kib_text(rss)}"]
    req_mb = job.get("req_mem") or 0
    if req_mb > 0:
        lines.append(f"Memory Efficiency: {100 * rss / (req_mb * 1024):.2f}% of {kib_text(req_mb * 1024)}")
    else:
        lines.append("Memory Efficiency: 0.00% of 0.00 MB (no memory requested)")
    if state == "RUNNING":
        lines.append("WARNING: Efficiency statistics may be misleading for RUNNING jobs.")
    return "\n".join(lines) + "\n"


def parser() -> ArgumentParser:
    """contribs/seff's options: ``-h`` (its usage) and ``-v`` (``seff Version 2.1``), both
    exiting 1 as seff does; ``--help``, ``--usage``, ``-V`` and ``--version`` answer the same
    and exit 0, as Slurm's own commands do."""
    p = ArgumentParser(prog="seff", description=__doc__.splitlines()[0], layout=LAYOUTS["seff"])
    p.add_argument("jobid", nargs="*")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if len(args.jobid) != 1:  # as contribs/seff: its usage, exit 1
        sys.stdout.write(p.answer("help"))
        return 1
    args.jobid = args.jobid[0]
    job_id = args.jobid.split("_")[0].split(".")[0]
    if not job_id.isdigit():
        print(f"seff: error: Invalid job id {args.jobid}", file=sys.stderr)
        return 1
    try:
        rows = Client().call("GET", "/acct", query={"jobs": job_id})["records"]
    except ClientError as exc:
        print(f"seff: error: {exc}", file=sys.stderr)
        return 1
    rows = [r for r in rows if str(r["job_id"]) == job_id]
    if not any(r["step"] is None for r in rows):
        print("Job not found.", file=sys.stderr)
        return 2
    sys.stdout.write(report(rows, time.time()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
