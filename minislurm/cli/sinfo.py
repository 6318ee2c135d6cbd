"""sinfo: view partitions and nodes."""

from __future__ import annotations

import sys
import time

from minislurm.cli import sinfo_states
from minislurm.cli.fmt.sinfo import format_partitions
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser, add_document_options
from minislurm.client import Client, ClientError
from minislurm.core.hostlist import HostlistError, expand


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="sinfo", layout=LAYOUTS["sinfo"])
    p.add_argument("-o", "--format", metavar="format", help="columns as %%-letters (%%P %%a %%l %%D ...)")
    p.add_argument("-N", "--Node", action="store_true", help="a line per node, not per partition")
    p.add_argument("-l", "--long", action="store_true", help="more columns (sizes, limits)")
    p.add_argument("-s", "--summarize", action="store_true", help="node counts by state only")
    p.add_argument("-R", "--list-reasons", action="store_true", help="why nodes are down or drained")
    p.add_argument("-h", "--noheader", action="store_true", help="leave out the header line")
    p.add_argument("-p", "--partition", metavar="PARTITION", help="only these partitions")
    p.add_argument("-n", "--nodes", metavar="NODES", help="only these nodes (a hostlist)")
    p.add_argument("-e", "--exact", action="store_true", help="group only identical nodes")
    p.add_argument("-t", "--states", metavar="node_state",
                   help="only nodes in these states (a,b: either; a&b: both)")
    p.add_argument("--noconvert", action="store_true", help="counts as they are (no K/M suffix)")
    add_document_options(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:  # checked before any request, as sinfo checks it
        names = set(expand(args.nodes)) if args.nodes else None
    except HostlistError:
        print(f"sinfo: error: '{args.nodes}' invalid entry for --nodes", file=sys.stderr)
        return 1
    try:  # read with the options, as sinfo reads it
        keep = sinfo_states.parse(args.states) if args.states else None
    except sinfo_states.BadState as exc:
        print(f'sinfo: error: Bad state string: "{exc}"\nsinfo: error: valid states: {sinfo_states.VALID}',
              file=sys.stderr)
        return 1
    client = Client()
    if args.json or args.yaml:  # every node, whatever the filters (22.05 ignores them here)
        try:
            nodes = client.call("GET", "/nodes")["nodes"]
        except ClientError as exc:
            print(f"slurm_load_node: {exc}", file=sys.stderr)
            return 1
        from minislurm.cli.fmt import json_out
        sys.stdout.write(json_out.dump(json_out.nodes_document(nodes), args.yaml))
        return 0
    try:
        parts = client.call("GET", "/partitions")["partitions"]
        nodes = client.call("GET", "/nodes")["nodes"]
    except ClientError as exc:
        print(f"slurm_load_partitions: {exc}", file=sys.stderr)  # sinfo's slurm_perror()
        return 1
    if args.partition:
        wanted = set(args.partition.split(","))
        parts = [x for x in parts if x["name"] in wanted]
    if names is not None:
        nodes = [n for n in nodes if n["name"] in names]
    if keep is not None:
        nodes = [n for n in nodes if keep(n)]
    try:
        text = format_partitions(parts, nodes, fmt=args.format, node_oriented=args.Node, long=args.long,
                                 summarize=args.summarize, list_reasons=args.list_reasons,
                                 noheader=args.noheader, exact=args.exact, now=time.time(),
                                 noconvert=args.noconvert)
    except ValueError as exc:  # a bad format: an unknown letter, a width over MAX_WIDTH
        print(f"sinfo: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
