"""sdiag: what the controller has been doing -- jobs, scheduling cycles, RPCs -- since its start
or the last ``sdiag --reset``.

minislurm simplifies: there is no agent queue (a message to an agent is sent at once, so
``Agent queue size`` and the pending RPCs are always empty) and no DBD agent (accounting is
saved with the state); a scheduling cycle's "table size" is its plan's promises plus one.
"""

from __future__ import annotations

import sys

from minislurm.cli.fmt.sdiag import format_sdiag
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser
from minislurm.client import Client, ClientError


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="sdiag", layout=LAYOUTS["sdiag"])
    p.add_argument("-a", "--all", action="store_true", help="every statistic (the default)")
    p.add_argument("-r", "--reset", action="store_true", help="set the counters back to zero (operators)")
    p.add_argument("-M", "--cluster", metavar="cluster", help="ask this cluster's controller (only this one)")
    p.add_argument("-i", "--sort-by-id", action="store_true", help="RPCs in the order of their ids")
    p.add_argument("-t", "--sort-by-time", action="store_true", help="RPCs by their total time")
    p.add_argument("-T", "--sort-by-time2", action="store_true", help="RPCs by their mean time")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        if args.cluster is not None and args.cluster != Client().call("GET", "/config")["config"]["ClusterName"]:
            print(f"sdiag: error: No cluster '{args.cluster}' known by database.\n"
                  f"sdiag: error: '{args.cluster}' can't be reached now, or it is an invalid entry for --cluster.  "
                  "Use 'sacctmgr list clusters' to see available clusters.", file=sys.stderr)
            return 1
        if args.reset:
            Client().call("POST", "/diag/reset", {})
            print("Reset scheduling statistics")
            return 0
        report = Client().call("GET", "/diag")
    except ClientError as exc:
        if args.reset:
            print(f"slurm_reset_statistics: {exc}", file=sys.stderr)
            return 255
        print(f"slurm_get_statistics: {exc}", file=sys.stderr)
        return 1
    sort = "id" if args.sort_by_id else "time" if args.sort_by_time else "time2" if args.sort_by_time2 else "count"
    sys.stdout.write(format_sdiag(report, sort))
    return 0
