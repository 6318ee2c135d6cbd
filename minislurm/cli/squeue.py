"""squeue: view the job queue, in Slurm's columns."""

from __future__ import annotations

import sys
import time
from itertools import repeat

from minislurm.cli.fmt.squeue import format_jobs, format_steps, job_fields, view_keys
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser, add_document_options
from minislurm.client import Client, ClientError
from minislurm.core.jobids import base_ids, parse_selectors, selected
from minislurm.core.states import JobState

DEFAULT_STATES = {"PENDING", "RUNNING", "COMPLETING", "SUSPENDED"}


def _states(text: str) -> set[str] | None:
    if text.lower() == "all":
        return None
    return {JobState.parse(s).name for s in text.split(",") if s}


def _views(reply: dict) -> list[dict]:
    """Job views from ``GET /jobs?fields=``'s columns (``{"all": v}``: every job has ``v``)."""
    count = reply["count"]
    columns = (c if isinstance(c, list) else repeat(c["all"], count) for c in reply["columns"])
    return [dict(zip(reply["fields"], row)) for row in zip(*columns)] if reply["fields"] else [{}] * count


def _me() -> str:
    import getpass
    return getpass.getuser()


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="squeue", layout=LAYOUTS["squeue"])
    p.add_argument("-o", "--format", metavar="format", help="columns as %%-letters (%%i %%P %%j %%u ...)")
    p.add_argument("-O", "--Format", metavar="format", help="columns as field names (JobID,State,...)")
    p.add_argument("-h", "--noheader", action="store_true", help="leave out the header line")
    p.add_argument("-u", "--user", metavar="user_name(s)", help="only jobs of these users")
    p.add_argument("--me", action="store_true", help="only your own jobs")
    p.add_argument("-j", "--jobs", metavar="job(s)", help="only these job ids (A_T for a task)")
    p.add_argument("-p", "--partition", metavar="partition(s)", help="only jobs in these partitions")
    p.add_argument("-t", "--states", metavar="states",
                   help="only jobs in these states; by default pending and running ones, 'all' for every state")
    p.add_argument("-l", "--long", action="store_true", help="add time limits, full state names")
    p.add_argument("--start", action="store_true", help="expected start times of pending jobs")
    p.add_argument("-S", "--sort", metavar="fields", help="sort by these format letters ('-' reverses)")
    p.add_argument("-r", "--array", action="store_true", help="a line per array task, not per array")
    p.add_argument("-a", "--all", action="store_true", help="include hidden partitions' jobs")
    p.add_argument("-i", "--iterate", type=float, metavar="seconds", help="repeat every so many seconds")
    p.add_argument("-n", "--name", metavar="job_name(s)", help="only jobs with these names")
    p.add_argument("-s", "--steps", nargs="?", const="", metavar="step(s)",
                   help="running steps, not jobs (or only J.S,...)")
    add_document_options(p)
    return p


def _document(yaml: bool) -> int:
    """``--json``/``--yaml``: every job the controller holds, as 22.05 prints them (its filters
    do not apply: :mod:`minislurm.cli.fmt.json_out`)."""
    client = Client()
    try:
        jobs = client.call("GET", "/jobs")["jobs"]
    except ClientError as exc:
        print(f"slurm_load_jobs error: {exc}", file=sys.stderr)
        return 1
    from minislurm.cli.fmt import json_out
    sys.stdout.write(json_out.dump(json_out.jobs_document(jobs, cluster=client.cluster_name()), yaml))
    return 0


def _steps(args) -> int:
    """``squeue -s``: the running steps of the jobs that ``-u``, ``-j`` and ``-p`` leave."""
    from minislurm.cli.jobsteps import running_steps
    try:
        selectors = parse_selectors(args.jobs) if args.jobs else None
    except ValueError as exc:
        print(f"squeue: error: Invalid job id: {exc}", file=sys.stderr)
        return 1
    client = Client()
    try:
        jobs = client.call("GET", "/jobs", query={"user": _me() if args.me else args.user, "partition": args.partition,
                                                  "ids": base_ids(selectors) if selectors else None})["jobs"]
        if selectors:
            jobs = [j for j in jobs if selected(selectors, j["job_id"], j["array_job_id"], j["array_task_id"], j.get("het_job_id"))]
        running, steps = running_steps(client, jobs)
    except ClientError as exc:
        print(f"slurm_get_job_steps error: {exc}", file=sys.stderr)
        return 1
    if args.steps:
        wanted = set(args.steps.split(","))
        steps = [r for r in steps if f"{r['job_id']}.{r['step']}" in wanted
                 or f"{r.get('display_id')}.{r['step']}" in wanted]
    # squeue sorts by step id, where Slurm numbers the batch and extern steps past every srun's
    steps.sort(key=lambda r: (r["job_id"], not r["step"].isdigit(), int(r["step"]) if r["step"].isdigit() else 0,
                              r["step"] != "batch"))
    sys.stdout.write(format_steps(steps, running, noheader=args.noheader, now=time.time()))
    return 0


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.json or args.yaml:
        return _document(args.yaml)
    if args.steps is not None:
        return _steps(args)
    try:
        states = _states(args.states) if args.states else DEFAULT_STATES
        _, fields = job_fields(args.format, long=args.long, start=args.start, long_format=args.Format)
    except ValueError as exc:
        print(f"squeue: error: {exc}", file=sys.stderr)
        return 1
    try:
        selectors = parse_selectors(args.jobs) if args.jobs else None
    except ValueError as exc:
        print(f"squeue: error: Invalid job id: {exc}", file=sys.stderr)
        return 1
    names = set(args.name.split(",")) if args.name else None
    query = {"user": _me() if args.me else args.user, "partition": args.partition,
             "ids": base_ids(selectors) if selectors else None,
             # Only the columns printed, and (unless -j, whose "Invalid job id" needs every state)
             # only the states shown: the controller's work and the reply scale with the output.
             "states": ",".join(sorted(states)) if states and not args.jobs else None,
             "fields": ",".join(view_keys(fields, args.sort or ("S" if args.start else None)))}
    client = Client()
    while True:
        try:
            reply = client.call("GET", "/jobs", query=query)
        except ClientError as exc:
            print(f"slurm_load_jobs error: {exc}", file=sys.stderr)  # slurm_perror("slurm_load_jobs error")
            return 1
        found = reply["jobs"] if "jobs" in reply else _views(reply)
        jobs = [j for j in found if (states is None or j["state"] in states) and (not selectors or selected(
            selectors, j["job_id"], j["array_job_id"], j["array_task_id"], j.get("het_job_id"))) and (not names or j["name"] in names)]
        if args.jobs and not jobs and not found:
            print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
            return 1
        try:
            text = format_jobs(jobs, fmt=args.format, long=args.long, start=args.start, noheader=args.noheader,
                               now=reply.get("now", time.time()), sort=args.sort, array=args.array,
                               long_format=args.Format)
        except ValueError as exc:  # an invalid -S sort key
            print(f"squeue: error: {exc}", file=sys.stderr)
            return 1
        sys.stdout.write(text)
        sys.stdout.flush()
        if not args.iterate:
            return 0
        time.sleep(args.iterate)
        print()
