"""sacct: accounting records of jobs and steps (one per run of a requeued job with -D)."""

from __future__ import annotations

import getpass
import os
import sys
import time
from datetime import datetime

from minislurm.cli.fmt.sacct import format_records
from minislurm.cli.main import ArgumentParser
from minislurm.client import Client, ClientError
from minislurm.core.timefmt import parse_begin


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="sacct")
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
    args = p.parse_args(argv)
    now = time.time()
    fields = None
    if args.format or os.environ.get("SACCT_FORMAT"):
        fields = [f for f in (args.format or os.environ["SACCT_FORMAT"]).split(",") if f]
    elif args.brief:
        fields = ["JobID", "State", "ExitCode"]
    elif args.long:
        fields = ["JobID", "JobIDRaw", "JobName", "Partition", "User", "Account", "AllocCPUS", "AllocNodes",
                  "NodeList", "State", "ExitCode", "Submit", "Start", "End", "Elapsed", "Timelimit", "AllocTRES"]
    query = {"jobs": ",".join(x.split("_")[0].split(".")[0] for x in args.jobs.split(",")) if args.jobs else None,
             "duplicates": "1" if args.duplicates else None}
    if not args.jobs:  # the default window: since midnight today
        since = parse_begin(args.starttime, now) if args.starttime else datetime.now().replace(
            hour=0, minute=0, second=0, microsecond=0).timestamp()
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
    if args.state:
        want = {s.upper() for s in args.state.split(",")}
        records = [r for r in records if r["state"] in want]
    try:
        text = format_records(records, fields=fields, parsable2=args.parsable2, parsable=args.parsable,
                              noheader=args.noheader, now=now)
    except ValueError as exc:
        print(f"sacct: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
