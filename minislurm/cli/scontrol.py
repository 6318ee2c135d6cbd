"""scontrol: look at and change the cluster (show, update, requeue, hold, release, token, reservations)."""

from __future__ import annotations

import os
import sys
import time

from minislurm.client import Client, ClientError, outlive_own_stop
from minislurm.core.hostlist import HostlistError, compress, expand
from minislurm.cli.scontrol_resv import NotCreated, report, reservation_fields
from minislurm.core.timefmt import parse_time_limit

USAGE = """usage: scontrol <command> [...]
  show job|node|partition|reservation|config [ID]   show hostnames [LIST]   show hostlist[sorted] LIST
  update NodeName=N State=DOWN|DRAIN|RESUME Reason=..   update JobId=N TimeLimit=..|Nice=..|Partition=..
  requeue|requeuehold|hold|uhold|release JOBID[,JOBID...]   token [username=U] [lifespan=S]
  create reservation ReservationName=R Nodes=.. StartTime=now Duration=.. Users=..   delete reservation R"""


def _pairs(words: list[str]) -> dict[str, str]:
    out = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep:
            raise ValueError(f"Invalid input: {w}")
        out[key] = value
    return out


def _lookup(pairs: dict[str, str], *names: str) -> str | None:
    for k, v in pairs.items():
        if k.lower() in names:
            return v
    return None


def _emit(records: list[str], oneliner: bool) -> None:
    """Records as scontrol prints them: each ends in a blank line, or (``-o``) is one line."""
    from minislurm.cli.fmt.scontrol import one_line
    sys.stdout.write("".join(one_line(r) if oneliner else r for r in records))


def _show(client: Client, what: str, arg: str | None, oneliner: bool = False, details: bool = False) -> int:
    from minislurm.cli.fmt import scontrol as fmt
    from minislurm.cli.fmt import scontrol_nodes as fmt_nodes
    kind = what.lower()
    if kind in ("hostnames", "hostname"):
        expr = arg or os.environ.get("SLURM_JOB_NODELIST")
        if not expr:
            print("scontrol: error: No hostlist specified", file=sys.stderr)
            return 1
        print("\n".join(expand(expr)))
        return 0
    if kind in ("hostlist", "hostlistsorted"):
        print(compress(expand(arg or ""), sort=kind == "hostlistsorted"))
        return 0
    if kind in ("job", "jobs"):
        query = {"ids": arg.split("_")[0]} if arg else None
        jobs = client.call("GET", "/jobs", query=query)["jobs"]
        if arg and "_" in arg:
            jobs = [j for j in jobs if j["display_id"] == arg]
        if arg and not jobs:
            print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
            return 1
        if not jobs:
            print("No jobs in the system")
            return 0
        now = time.time()
        _emit([fmt.show_job(j, now=now, details=details) for j in sorted(jobs, key=lambda j: j["job_id"])], oneliner)
        return 0
    if kind in ("node", "nodes"):
        nodes = client.call("GET", "/nodes")["nodes"]
        if arg:
            wanted = set(expand(arg))
            nodes = [n for n in nodes if n["name"] in wanted]
            if not nodes:
                print(f"Node {arg} not found", file=sys.stderr)
                return 1
        _emit([fmt_nodes.show_node(n) for n in nodes], oneliner)
        return 0
    if kind in ("partition", "partitions"):
        parts = client.call("GET", "/partitions")["partitions"]
        if arg:
            parts = [p for p in parts if p["name"] == arg]
            if not parts:
                print(f"Partition {arg} not found", file=sys.stderr)
                return 1
        nodes = client.call("GET", "/nodes")["nodes"]  # their memory makes the partition's TRES
        _emit([fmt_nodes.show_partition(p, nodes) for p in parts], oneliner)
        return 0
    if kind in ("config",):
        items = client.call("GET", "/config")["config"]
        print(f"Configuration data as of {time.strftime('%Y-%m-%dT%H:%M:%S')}")
        width = max(len(k) for k in items)
        for k, v in items.items():
            print(f"{k:<{width}} = {v}")
        return 0
    if kind in ("reservation", "reservations", "res"):
        resvs = client.call("GET", "/reservations")["reservations"]
        if arg:
            resvs = [r for r in resvs if r["name"] == arg]
        if not resvs:
            print("No reservations in the system")
            return 0
        _emit([fmt_nodes.show_reservation(r) for r in resvs], oneliner)
        return 0
    print(f"scontrol: error: invalid entity: {what} for keyword:show", file=sys.stderr)
    return 1


def _job_action(client: Client, action: str, arg: str) -> int:
    status = 0
    if action in ("requeue", "requeuehold"):
        outlive_own_stop()
    for text in arg.split(","):
        try:
            job_id = int(text.split("_")[0])
            if action in ("requeue", "requeuehold"):
                client.call("POST", f"/jobs/{job_id}/requeue", {"hold": action == "requeuehold"})
            elif action in ("hold", "uhold"):
                client.call("POST", f"/jobs/{job_id}/hold", {"kind": "user" if action == "uhold" else None})
            else:
                client.call("POST", f"/jobs/{job_id}/release")
        except ValueError:
            print(f"Invalid job id specified for job {text}", file=sys.stderr)
            status = 1
        except ClientError as exc:
            print(f"{exc} for job {text}", file=sys.stderr)
            status = 1
    return status


def _update_partition(client: Client, name: str, pairs: dict[str, str]) -> int:
    """``update PartitionName=P MaxTime=T`` (the one partition field minislurm changes)."""
    body: dict = {"name": name}
    for key, value in pairs.items():
        if key.lower() == "maxtime":
            try:
                minutes = parse_time_limit(value)
            except ValueError:  # scontrol 22.05 then also reports the (absent) error of the RPC
                print(f"scontrol: error: Invalid input {key}={value}\nslurm_update error: No error", file=sys.stderr)
                return 1
            body["max_time"] = "INFINITE" if minutes == float("inf") else minutes
        elif key.lower() != "partitionname":
            raise ValueError(f"Update of this parameter is not supported: {key}")
    client.call("POST", "/partitions/update", body)
    return 0


# scontrol's own options (src/scontrol/scontrol.c), for getopt's complaint about any other;
# minislurm acts on -o and -d.
_OPTIONS = [("-a", "--all"), ("-M", "--cluster", "--clusters", None), ("-d", "--details"), ("--federation",),
            ("-F", "--future"), ("-h", "--usage"), ("--hide",), ("--local",), ("-o", "--oneliner"),
            ("-Q", "--quiet"), ("--sibling",), ("-u", "--uid", None), ("-v", "--verbose"), ("-V", "--version")]


def _bad_option(argv: list[str]) -> str | None:
    """What scontrol prints for an option it does not know (getopt's words, rc 1), if any."""
    from minislurm.cli.main import ArgumentParser
    p = ArgumentParser(prog="scontrol")
    for names in _OPTIONS:
        value = names[-1] is None
        p.add_argument(*names[:-1] if value else names, action="store" if value else "store_true")
    problem = p.unknown_option(argv)
    return f'scontrol: {problem}\nTry "scontrol --help" for more information' if problem else None


def main(argv: list[str]) -> int:
    if (problem := _bad_option(argv)) is not None:
        print(problem, file=sys.stderr)
        return 1
    # options anywhere, as getopt allows: -o one line per record, -d details
    oneliner = any(a in ("-o", "--oneliner") for a in argv)
    details = any(a in ("-d", "--details") for a in argv)
    argv = [a for a in argv if a not in ("-o", "--oneliner", "-d", "--details")]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 1
    cmd, rest = argv[0].lower(), argv[1:]
    try:
        if cmd == "show" and rest and rest[0].lower() in ("hostnames", "hostname", "hostlist", "hostlistsorted"):
            return _show(None, rest[0], rest[1] if len(rest) > 1 else None)  # needs no controller
        client = Client()
        if cmd == "show":
            if not rest:
                print("scontrol: error: too few arguments for keyword:show", file=sys.stderr)
                return 1
            return _show(client, rest[0], rest[1] if len(rest) > 1 else None, oneliner, details)
        if cmd in ("requeue", "requeuehold", "hold", "uhold", "release"):
            if not rest:
                print(f"scontrol: error: too few arguments for keyword:{cmd}", file=sys.stderr)
                return 1
            return _job_action(client, cmd, rest[-1])
        if cmd == "token":
            pairs = _pairs(rest)
            reply = client.call("POST", "/token", {"username": _lookup(pairs, "username"),
                                                   "lifespan": _lookup(pairs, "lifespan")})
            print(f"SLURM_JWT={reply['token']}")
            return 0
        if cmd == "update":
            pairs = _pairs(rest)
            node = _lookup(pairs, "nodename", "node")
            job = _lookup(pairs, "jobid", "job")
            resv = _lookup(pairs, "reservationname", "reservation")
            part = _lookup(pairs, "partitionname")
            state = (_lookup(pairs, "state") or "").upper()
            if node and state in ("DOWN", "DRAIN", "FAIL") and not _lookup(pairs, "reason"):
                # checked by scontrol itself (src/scontrol/update_node.c), before any request
                print("You must specify a reason when DOWNING or DRAINING a node. Request denied", file=sys.stderr)
                return 1
            if node:
                client.call("POST", "/nodes/update", {"names": expand(node), "state": _lookup(pairs, "state"),
                                                      "reason": _lookup(pairs, "reason")})
            elif job:
                fields = {k: v for k, v in pairs.items() if k.lower() not in ("jobid", "job")}
                try:
                    client.call("POST", f"/jobs/{int(job.split('_')[0])}/update", fields)
                except ClientError as exc:  # scontrol 22.05 words a job's refusal so
                    print(f"{exc} for job {job}", file=sys.stderr)
                    return 1
            elif part and not resv:
                return _update_partition(client, part, pairs)
            elif resv:
                fields = reservation_fields({k: v for k, v in pairs.items()
                                              if k.lower() not in ("reservationname", "reservation")})
                try:
                    client.call("POST", f"/reservations/{resv}", fields)
                except ClientError as exc:
                    report("update", exc)
                    return 1
            else:
                print("scontrol: error: No valid entity in update command", file=sys.stderr)
                return 1
            return 0
        if cmd == "create" and rest and rest[0].lower() in ("reservation", "res"):
            fields = reservation_fields(_pairs(rest[1:]), create=True)
            try:
                name = client.call("POST", "/reservations", fields)["name"]
            except ClientError as exc:
                report(cmd, exc)
                return 1
            print(f"Reservation created: {name}")
            return 0
        if cmd == "delete" and rest:
            # `delete ReservationName=R`, `delete reservation R` and `delete reservation=R`
            words = rest[1:] if rest[0].lower() in ("reservation", "res") and len(rest) > 1 else rest
            name = _lookup(_pairs(words), "reservationname", "reservation") if "=" in words[0] else words[0]
            try:
                client.call("DELETE", f"/reservations/{name}")
            except ClientError as exc:
                report(cmd, exc, rest[0])
                return 1
            return 0
    except ClientError as exc:
        where = {"update": "slurm_update error", "create": "Error creating the reservation",
                 "delete": "Error deleting the reservation", "token": "scontrol: error"}.get(cmd, "scontrol: error")
        if cmd == "show" and rest:  # slurm_perror() after each load call, as scontrol does
            where = {"job": "slurm_load_jobs error", "node": "slurm_load_node error",
                     "partition": "slurm_load_partitions error"}.get(rest[0].lower().rstrip("s"), where)
        print(f"{where}: {exc}", file=sys.stderr)
        return 1
    except NotCreated as exc:
        print(f"scontrol: error: {exc}  No reservation created.", file=sys.stderr)
        return 1
    except (ValueError, HostlistError, IndexError) as exc:
        print(f"scontrol: error: {exc}", file=sys.stderr)
        return 1
    print(f"scontrol: error: Invalid command: {argv[0]}", file=sys.stderr)
    return 1
