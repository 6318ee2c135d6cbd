"""sacct: accounting records of jobs and steps (one per run of a requeued job with -D)."""

from __future__ import annotations

import getpass
import os
import sys
import time
from datetime import datetime

from minislurm.cli.fmt.sacct import field_list, format_records
from minislurm.cli.main import ArgumentParser
from minislurm.client import Client, ClientError
from minislurm.core.jobids import base_ids, parse_selectors, selected
from minislurm.core.states import JobState
from minislurm.core.timefmt import parse_begin


def _selected(selectors: list, record: dict) -> bool:
    """``-j 12_3``: the record's display id (``12_3``) names its array and task."""
    array, _, task = (record.get("display_id") or "").partition("_")
    return selected(selectors, record["job_id"], int(array) if task else None, int(task) if task else None)


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="sacct", try_help=False)
    p.add_argument("-j", "--jobs")
    p.add_argument("-X", "--allocations", action="store_true")
    p.add_argument("-o", "--format")
    p.add_argument("-P", "--parsable2", action="store_true")
    p.add_argument("-p", "--parsable", action="store_true")
    p.add_argument("-n", "--noheader", action="store_true")
    p.add_argument("-D", "--duplicates", action="store_true")
    p.add_argument("-u", "--user")
    p.add_argument("-a", "--allusers", action="store_true")
    p.add_argument("-S", "--starttime")
    p.add_argument("-s", "--state")
    p.add_argument("-b", "--brief", action="store_true")
    p.add_argument("-l", "--long", action="store_true")
    p.add_argument("-e", "--helpformat", action="store_true")
    p.add_argument("--name")
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
        selectors = parse_selectors(args.jobs) if args.jobs else None
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
    if not args.jobs:  # the default window: since midnight today
        try:
            since = parse_begin(args.starttime, now) if args.starttime else datetime.now().replace(
                hour=0, minute=0, second=0, microsecond=0).timestamp()
        except ValueError:
            print(f"Invalid time specification (pos=0): {args.starttime}", file=sys.stderr)
            return 1
        query["since"] = str(since)
    me = getpass.getuser()
    if args.user:
        query["user"] = args.user
    elif not (args.allusers or args.jobs or os.geteuid() == 0):
        query["user"] = me
    try:
        records = Client().call("GET", "/acct", query=query)["records"]
    except (ClientError, ValueError) as exc:
        print(f"sacct: error: {exc}", file=sys.stderr)
        return 1
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
    try:
        text = format_records(records, fields=fields, parsable2=args.parsable2, parsable=args.parsable,
                              noheader=args.noheader, now=now)
    except ValueError as exc:
        print(f"sacct: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
