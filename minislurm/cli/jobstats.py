"""jobstats: what a job used against what it asked for, per node and per task, with advice.

Not a Slurm command: many sites install Princeton's ``jobstats`` (it reads a Prometheus
database their nodes feed); this one reads minislurm's own accounting, which keeps what each
step used on each node (CPU time and peak memory sampled from /proc, per task; GPU utilisation
and memory through NVML when the GPUs are real).  ``seff`` gives the one-line-per-figure view
Slurm's contribs ship; ``jobstats`` the same per node, per task and per GPU, and what to ask
for next time (:mod:`minislurm.cli.fmt.jobstats`).  A running job's figures are the ones so
far, asked of its nodes as ``sstat`` asks.
"""

from __future__ import annotations

import json
import re
import sys
import time

from minislurm.cli.fmt.jobstats import collect, render
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser
from minislurm.client import Client, ClientError


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="jobstats", description=__doc__.splitlines()[0], layout=LAYOUTS["jobstats"])
    p.add_argument("jobid")
    p.add_argument("-j", "--json", action="store_true", help="Print the report as JSON (the figures, no words).")
    return p


def fetch(client: Client, job: str) -> dict | None:
    """The report of job ``job`` (``12``, or an array's task ``12_3``); None if accounting does
    not know it.  A ValueError for a whole array: its tasks are jobs of their own."""
    base = job.partition("_")[0]
    rows = [r for r in client.call("GET", "/acct", query={"jobs": base})["records"]
            if (r["display_id"] if "_" in job else str(r["job_id"])) == job]
    heads = [r for r in rows if r["step"] is None]
    if not heads:
        return None
    if len(heads) > 1:
        raise ValueError(f"job {job} is an array: name one of its tasks ({heads[0]['display_id']})")
    job_id = str(heads[0]["job_id"])
    live = None
    if heads[0]["state"] == "RUNNING":
        try:
            live = {s["step"]: s["nodes"] for s in client.call("GET", f"/jobs/{job_id}/usage")["steps"]}
        except ClientError:  # it ended meanwhile: its records say all there is
            live = None
    return collect(rows, time.time(), live)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    job_id = args.jobid.split(".")[0]
    if not re.fullmatch(r"\d+(_\d+)?", job_id, re.ASCII):
        print(f"jobstats: error: Invalid job id {args.jobid}", file=sys.stderr)
        return 1
    try:
        report = fetch(Client(), job_id)
    except (ClientError, ValueError) as exc:
        print(f"jobstats: error: {exc}", file=sys.stderr)
        return 1
    if report is None:
        print(f"jobstats: error: job {job_id} not found", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(report, indent=2) + "\n" if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
