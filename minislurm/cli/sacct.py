"""sacct: accounting records of jobs and steps (one per run of a requeued job with -D)."""

from __future__ import annotations

import getpass
import os
import sys
import time
from datetime import datetime

from minislurm.cli.fmt.sacct import field_list, format_records
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser, add_document_options
from minislurm.client import Client, ClientError
from minislurm.core.jobids import base_ids, parse_selectors, selected
from minislurm.core.states import JobState
from minislurm.core.timefmt import parse_begin


def _selected(selectors: list, record: dict) -> bool:
    """``-j 12_3``: the record's display id (``12_3``) names its array and task."""
    array, _, task = (record.get("display_id") or "").partition("_")
    return selected(selectors, record["job_id"], int(array) if task else None, int(task) if task else None,
                    record.get("het_job_id"))


def _stamp(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(when))


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="sacct", try_help=False, layout=LAYOUTS["sacct"])
    p.add_argument("-j", "--jobs", metavar="job(.step)", action="append",
                   help="Only these jobs (comma-separated ids; A_T for an array task, N.step for a step; "
                        "each -j adds to the list). Without -j, the jobs since -S.")
    p.add_argument("-X", "--allocations", action="store_true", help="Only the jobs' own lines, not their steps.")
    p.add_argument("-o", "--format", metavar="fields", help="The fields to print, comma-separated (-e lists them).")
    p.add_argument("-P", "--parsable2", action="store_true", help="Fields split by '|', none at the end.")
    p.add_argument("-p", "--parsable", action="store_true", help="Fields split by '|', one at the end.")
    p.add_argument("-n", "--noheader", action="store_true", help="Leave out the header lines.")
    p.add_argument("-D", "--duplicates", action="store_true",
                   help="Every run of a requeued job, not only its last one.")
    p.add_argument("-u", "--user", metavar="users", help="Only jobs of these users (by default your own).")
    p.add_argument("-a", "--allusers", action="store_true", help="Jobs of every user (root's default).")
    p.add_argument("-S", "--starttime", metavar="time",
                   help="Jobs since this time (by default midnight today).")
    p.add_argument("-E", "--endtime", metavar="time",
                   help="Jobs eligible before this time (by default now).")
    p.add_argument("-M", "--clusters", metavar="cluster_list",
                   help="Jobs of these clusters (comma-separated; all for every cluster).")
    p.add_argument("-s", "--state", metavar="states",
                   help="Only jobs in these states (names or codes: r, cd, f, to, ca, nf, ...).")
    p.add_argument("-b", "--brief", action="store_true", help="Only JobID, State and ExitCode.")
    p.add_argument("-l", "--long", action="store_true", help="Many more fields per line.")
    p.add_argument("-e", "--helpformat", action="store_true", help="List the fields -o accepts.")
    p.add_argument("--name", metavar="names", help="Only jobs with these names.")
    add_document_options(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.helpformat:
        sys.stdout.write(field_list())
        return 0
    now = time.time()
    fields = None
    if args.format or os.environ.get("SACCT_FORMAT"):
        fields = [f for f in (args.format or os.environ["SACCT_FORMAT"]).split(",") if f]
    elif args.brief:
        fields = ["JobID", "State", "ExitCode"]
    elif args.long:
        fields = ["JobID", "JobIDRaw", "JobName", "Partition", "User", "Account", "AllocCPUS", "AllocNodes",
                  "NodeList", "State", "ExitCode", "Submit", "Start", "End", "Elapsed", "Timelimit", "AllocTRES"]
    try:
        selectors = parse_selectors(",".join(args.jobs)) if args.jobs else None  # every -j counts
    except ValueError as exc:
        print(f"sacct: fatal: Bad job/step specified: {exc}", file=sys.stderr)
        return 1
    query = {"jobs": base_ids(selectors) if selectors else None, "duplicates": "1" if args.duplicates else None}
    want = set()
    for name in filter(None, (args.state or "").split(",")):  # -s CD,f,RUNNING: codes or names
        try:
            want.add(JobState.parse(name).name)
        except ValueError:
            print(f"sacct: fatal: unrecognized job state value '{name}'", file=sys.stderr)
            return 1
    since = until = None
    for name, text in (("start", args.starttime), ("end", args.endtime)):
        try:
            when = parse_begin(text, now) if text else None
        except ValueError:
            print(f"Invalid time specification (pos=0): {text}", file=sys.stderr)
            return 1
        since, until = (when, until) if name == "start" else (since, when)
    if not args.jobs and since is None:  # the default window: since midnight today
        since = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    if until is not None and (since or 0) > until:
        print(f"sacct: error: Start time ({_stamp(since)}) requested is after end time ({_stamp(until)}).",
              file=sys.stderr)
        return 1
    if not args.jobs:
        query["since"] = str(since)
    me = getpass.getuser()
    if args.user:
        query["user"] = args.user
    elif not (args.allusers or args.jobs or os.geteuid() == 0):
        query["user"] = me
    client = Client()
    try:
        records = client.call("GET", "/acct", query=query)["records"]
        clusters = {c.lower() for c in (args.clusters or "").split(",") if c}
        if clusters and not clusters & {"all", "-1"} and (client.cluster_name() or "").lower() not in clusters:
            records = []  # another cluster's jobs: minislurm's database holds only its own
    except (ClientError, ValueError) as exc:
        print(f"sacct: error: {exc}", file=sys.stderr)
        return 1
    if until is not None:  # -E: the jobs eligible by then, with their steps
        jobs = {(r["job_id"], r.get("restart")) for r in records if r["step"] is None
                and (r.get("eligible") or r.get("submit") or 0) <= until}
        records = [r for r in records if (r["job_id"], r.get("restart")) in jobs]
    if args.allocations:
        records = [r for r in records if r["step"] is None]
    if selectors:
        records = [r for r in records if _selected(selectors, r)]
    if want:
        records = [r for r in records if r["state"] in want]
    if args.name:  # --name=a,b: jobs of those names, with their steps
        names = set(args.name.split(","))
        jobs = {(r["job_id"], r.get("restart")) for r in records if r["step"] is None and r["name"] in names}
        records = [r for r in records if (r["job_id"], r.get("restart")) in jobs]
    if args.json or args.yaml:  # the same selection, as 22.05's openapi/dbv0.0.38 prints it
        from minislurm.cli.fmt import json_out
        doc = json_out.sacct_document(records, cluster=client.cluster_name(), now=now)
        sys.stdout.write(json_out.dump(doc, args.yaml))
        return 0
    try:
        text = format_records(records, fields=fields, parsable2=args.parsable2, parsable=args.parsable,
                              noheader=args.noheader, now=now)
    except ValueError as exc:
        print(f"sacct: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
