"""sprio: why is one pending job ahead of another?  The weighted priority factors of each."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from minislurm.cli.fmt.sprio import format_sprio
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser
from minislurm.client import Client, ClientError


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="sprio", layout=LAYOUTS["sprio"])
    p.add_argument("-l", "--long", action="store_true", help="every factor, with user and TRES")
    p.add_argument("-h", "--noheader", action="store_true", help="leave out the header line")
    p.add_argument("-o", "--format", metavar="format", help="columns as %%-letters (%%i %%Y %%A %%F ...)")
    p.add_argument("-j", "--jobs", metavar="job(s)", help="only these pending jobs (comma-separated)")
    p.add_argument("-u", "--user", metavar="user_name", help="only pending jobs of these users")
    p.add_argument("-n", "--norm", action="store_true", help="the factors unweighted (0 to 1)")
    p.add_argument("-v", "--verbose", action="count", default=0, help="print the options first")
    p.add_argument("-w", "--weights", action="store_true", help="the weight of each factor")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.verbose:  # sprio's _print_options(), before any request
        print(f"-----------------------------\nformat     = {args.format or '(null)'}\n"
              f"job_flag   = {int(bool(args.jobs))}\njobs       = {args.jobs or '(null)'}\n"
              f"partition  = (null)\nusers      = {args.user or '(null)'}\nverbose    = {args.verbose}\n"
              "-----------------------------\n\n")
    ids = set()
    for word in filter(None, (args.jobs or "").split(",")):
        if not (word.isascii() and word.isdigit() and int(word) > 0):
            print(f"sprio: error: Invalid job id: {word}", file=sys.stderr)
            return 1
        ids.add(int(word))
    try:
        reply = Client().call("GET", "/priorities")
        weights = Client().call("GET", "/config")["config"]
    except ClientError as exc:
        print(f"sprio: error: {exc}", file=sys.stderr)
        return 1
    w = {"age": weights.get("PriorityWeightAge", 0), "fairshare": weights.get("PriorityWeightFairShare", 0),
         "jobsize": weights.get("PriorityWeightJobSize", 0), "partition": weights.get("PriorityWeightPartition", 0)}
    if args.weights:
        print("          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION")
        print(f"        Weights                               1 {w['age']:>10} {w['fairshare']:>10} "
              f"{w['jobsize']:>10} {w['partition']:>10}")
        return 0
    rows = [SimpleNamespace(**r) for r in reply["factors"]]
    if ids:
        rows = [r for r in rows if r.job_id in ids]
    if args.user:
        rows = [r for r in rows if r.user in args.user.split(",")]
    if reply["type"] == "priority/basic":
        print("You are not running a supported priority plugin\n(priority/basic).\n"
              "Only 'priority/multifactor' is supported.", file=sys.stderr)  # Slurm 22.05's words
        return 1
    try:
        text = format_sprio(rows, long=args.long, noheader=args.noheader, weights=w, fmt=args.format,
                            norm=args.norm, users=bool(args.user),
                            cluster=weights.get("ClusterName"))
    except ValueError as exc:  # a bad format: an unknown letter, a width over MAX_WIDTH
        print(f"sprio: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
