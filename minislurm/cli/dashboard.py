"""minislurm dashboard: the link to the live dashboard the controller serves (not a Slurm command).

The dashboard shows the whole cluster, read only, and updates itself every second: the nodes'
GPUs and who holds them, the queue with its reasons and expected starts, the backfill plan as a
Gantt chart, fair share per account and recent node failures and requeues
(:mod:`minislurm.ctld.dashboard`).  Its data needs a token, as every command's request does: the
link carries a new one of yours (what ``scontrol token`` gives) after ``#``, the part of a link
a browser keeps to itself.  Anyone with the link sees what you may see until it expires.
"""

from __future__ import annotations

import argparse
import sys

from minislurm.client import Client, ClientError

LIFESPAN = 8 * 3600  # seconds: a class session


def dashboard_url(client: Client, lifespan: int = LIFESPAN) -> str:
    """The page's address on the controller, with a new token of the client's user."""
    token = client.call("POST", "/token", {"lifespan": lifespan})["token"]
    host, port = client.address
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/dashboard#token={token}"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="minislurm dashboard", description="print the link to the cluster's live "
                                "dashboard (open it in a browser)")
    p.add_argument("--lifespan", type=int, default=LIFESPAN, metavar="SECONDS",
                   help=f"how long the link works (default {LIFESPAN // 3600} hours)")
    args = p.parse_args(argv)
    try:
        link = dashboard_url(Client(), args.lifespan)
    except ClientError as exc:
        print(f"minislurm dashboard: error: {exc}", file=sys.stderr)
        return 1
    print(link)
    print(f"Open the link above in a browser; it works for {args.lifespan // 60} minutes and shows the cluster "
          "read only.  Keep it to yourself: it carries your token.", file=sys.stderr)
    return 0
