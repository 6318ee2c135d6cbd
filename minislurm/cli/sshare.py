"""sshare: fair-share shares and decayed usage per account and user."""

from __future__ import annotations

import getpass
import sys
from types import SimpleNamespace

from minislurm.cli.fmt.sshare import FIELDS, format_sshare, parse_fields
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser, add_document_options
from minislurm.client import Client, ClientError


def help_format() -> str:
    """``sshare -e``: the field names, four to a line, each in 17 columns."""
    lines = [" ".join(f"{name:<17}" for name, _ in FIELDS[i:i + 4]) for i in range(0, len(FIELDS), 4)]
    return "".join(line + "\n" for line in lines)


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="sshare", layout=LAYOUTS["sshare"])
    p.add_argument("-a", "--all", action="store_true", help="every user, not only you")
    p.add_argument("-l", "--long", action="store_true", help="add normalized usage and limits")
    p.add_argument("-n", "--noheader", action="store_true", help="leave out the header lines")
    p.add_argument("-u", "--users", metavar="users", help="these users (comma-separated)")
    p.add_argument("-U", "--Users", action="store_true", help="only the users' rows, no accounts")
    p.add_argument("-o", "--format", metavar="fields", action="append",
                   help="the columns, comma-separated (NAME[%%WIDTH]; -e lists them)")
    p.add_argument("-e", "--helpformat", action="store_true", help="list the fields --format knows")
    p.add_argument("-P", "--parsable2", action="store_true", help="fields split by '|', none at the end")
    p.add_argument("-p", "--parsable", action="store_true", help="fields split by '|', one at the end")
    add_document_options(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.helpformat:
        sys.stdout.write(help_format())
        return 0
    try:  # checked once the options are read, before the controller is asked
        fields = parse_fields(",".join(args.format)) if args.format else None
    except ValueError as exc:
        print(f"sshare: error: {exc}", file=sys.stderr)
        return 1
    client = Client()
    try:
        reply = client.call("GET", "/shares")
    except ClientError as exc:
        print(f"sshare: error: {exc}", file=sys.stderr)
        return 1
    if args.json or args.yaml:  # minislurm's (sshare has no --json in 22.05): every row
        from minislurm.cli.fmt import json_out
        doc = json_out.sshare_document(reply["shares"], reply.get("parents"), cluster=client.cluster_name())
        sys.stdout.write(json_out.dump(doc, args.yaml))
        return 0
    rows = [SimpleNamespace(**r) for r in reply["shares"]]
    users = args.users.split(",") if args.users else [getpass.getuser()]
    sys.stdout.write(format_sshare(rows, all_users=args.all, noheader=args.noheader, parents=reply.get("parents"),
                                   users=users, parsable=args.parsable, parsable2=args.parsable2, long=args.long,
                                   fair_tree=reply.get("fair_tree", True), tres=reply.get("tres"),
                                   root_run=reply.get("root_tres_run_mins"), fields=fields,
                                   users_only=args.Users,
                                   cluster=client.cluster_name() if fields and "Cluster" in dict(fields)
                                   else None))
    return 0
