"""scontrol: look at and change the cluster (show, update, requeue, hold, release, token, reservations)."""

from __future__ import annotations

import os
import sys
import time

from minislurm.client import Client, ClientError, controller_name, outlive_own_stop, quote
from minislurm.core import errors
from minislurm.core.hostlist import HostlistError, compress, expand
from minislurm.core.jobids import job_targets, split_job_list
from minislurm.cli.scontrol_resv import NotCreated, report, reservation_fields
from minislurm.core.timefmt import parse_time_limit

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


def _document(doc: dict, kind: str) -> int:
    from minislurm.cli.fmt import json_out
    sys.stdout.write(json_out.dump(doc, kind == "yaml"))
    return 0


def _show(client: Client, what: str, arg: str | None, oneliner: bool = False, details: bool = False,
          as_doc: str | None = None) -> int:
    """``as_doc`` ("json"/"yaml"): job, node and partition records as slurmrestd's v0.0.38
    documents (minislurm's: scontrol's --json came in 23.02; see :mod:`minislurm.cli.fmt.json_out`)."""
    from minislurm.cli.fmt import json_out
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
        if as_doc:
            return _document(json_out.jobs_document(jobs, cluster=client.cluster_name()), as_doc)
        if not jobs:
            print("No jobs in the system")
            return 0
        now = time.time()
        jobs = sorted(_array_records(jobs), key=lambda j: j["job_id"])
        records = [fmt.show_job(j, now=now, details=details) for j in jobs]
        if details and arg and not oneliner:
            records = [_with_why(client, j, r) for j, r in zip(jobs, records)]
        _emit(records, oneliner)
        return 0
    if kind in ("step", "steps"):
        return _show_steps(client, arg, oneliner)
    if kind in ("node", "nodes"):
        nodes = client.call("GET", "/nodes")["nodes"]
        if arg:
            wanted = set(expand(arg))
            nodes = [n for n in nodes if n["name"] in wanted]
            if not nodes:
                print(f"Node {arg} not found", file=sys.stderr)
                return 1
        if as_doc:
            return _document(json_out.nodes_document(nodes), as_doc)
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
        if as_doc:
            return _document(json_out.partitions_document(parts, nodes), as_doc)
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


def _with_why(client: Client, job: dict, record: str) -> str:
    """``scontrol show job -d JOBID`` of a pending job: Slurm's lines as 22.05 prints them, then
    minislurm's own section, why it waits (``minislurm why JOBID``; see cli/why.py).  Only for a
    job named on the line (working out the what-ifs of a whole queue would take long) and not
    with ``-o``, whose one line per record scripts parse as Key=Value words."""
    from minislurm.cli.fmt.fields import printable
    from minislurm.cli.fmt.scontrol import IND
    from minislurm.cli.why import section
    if job.get("state") != "PENDING":
        return record
    try:
        w = client.call("GET", f"/jobs/{job['job_id']}/why")
    except ClientError:
        return record
    return record.rstrip("\n") + IND + IND.join(printable(line) for line in section(w)) + "\n\n"


def _array_records(jobs: list[dict]) -> list[dict]:
    """An array's tasks still waiting in its record (those showing the array's own id) are
    one record, as slurmctld keeps them: ``JobId=12 ArrayJobId=12 ArrayTaskId=2-3``."""
    from minislurm.cli.fmt.squeue import collapse_arrays
    waiting = [j for j in jobs if j.get("state") == "PENDING" and j.get("array_task_id") is not None
               and j["job_id"] == j.get("array_job_id")]
    if len(waiting) < 2:
        return jobs
    ids = {id(j) for j in waiting}
    records = [j for j in jobs if id(j) not in ids]
    for meta in collapse_arrays(waiting):
        if meta.get("array_task_str"):
            meta = dict(meta, array_task_str=meta["array_task_str"].split("%")[0],
                        reason=meta["reason"].split(",")[0])
        records.append(meta)
    return records


def _show_steps(client: Client, arg: str | None, oneliner: bool) -> int:
    """``show step[s] [JOBID[.STEP]]``: the running steps (see :mod:`minislurm.cli.fmt.scontrol_steps`)."""
    from minislurm.cli.fmt.scontrol_steps import show_step
    from minislurm.cli.jobsteps import running_steps
    want_job, _, want_step = (arg or "").partition(".")
    every = client.call("GET", "/jobs")["jobs"]
    if want_job:
        every = [j for j in every if str(j["job_id"]) == want_job or j.get("display_id") == want_job]
        if not every:
            print(f"slurm_get_job_steps error: {errors.INVALID_JOB_ID}", file=sys.stderr)
            return 1
    jobs, steps = running_steps(client, every, want_step)
    if steps:
        _emit([show_step(r, jobs[r["job_id"]]) for r in steps], oneliner)
        return 0
    if not arg:
        print("No job steps in the system")
        return 0
    digits = want_step[:len(want_step) - len(want_step.lstrip("0123456789"))]
    number = str(int(digits or 0)) if want_step else ""  # scontrol reads the step with strtol
    print(f"Job step {want_job}.{number} not found")  # on stdout, as scontrol prints it
    return 1


def _ping() -> int:
    """``scontrol ping``: whether the controller answers, named as slurm.conf's SlurmctldHost
    names it (minislurm has one controller, the primary); exit 1 when it is down."""
    try:
        host = controller_name()
    except ClientError as exc:
        print(f"scontrol: error: {exc}", file=sys.stderr)
        return 1
    try:
        Client(patience=0, timeout=10).call("GET", "/config")
        up = True
    except ClientError:
        up = False
    print(f"Slurmctld(primary) at {host} is {'UP' if up else 'DOWN'}")
    return 0 if up else 1


def _each_job(arg: str, send) -> int:
    """``send(job_id, task)`` for each job of a job list: ``12`` (every task of an array), ``12_3``,
    ``12_[1-3]``, comma-separated; a refusal is printed as scontrol 22.05 words it, and the rest go on."""
    status = 0
    for text in split_job_list(arg):
        try:
            job_id, tasks = job_targets(text)
        except ValueError:
            print(f"{errors.INVALID_JOB_ID} for job {text}", file=sys.stderr)
            status = 1
            continue
        for task in tasks or [None]:
            try:
                send(job_id, {"task": task})
            except ClientError as exc:
                print(f"{exc} for job {text if task is None or len(tasks) == 1 else f'{job_id}_{task}'}",
                      file=sys.stderr)
                status = 1
    return status


def _job_action(client: Client, action: str, arg: str) -> int:
    """hold|uhold|release|requeue|requeuehold of a job list."""
    if action in ("requeue", "requeuehold"):
        outlive_own_stop()
        return _each_job(arg, lambda job_id, query: client.call(
            "POST", f"/jobs/{job_id}/requeue", {"hold": action == "requeuehold"}, query=query))
    if action in ("hold", "uhold"):
        return _each_job(arg, lambda job_id, query: client.call(
            "POST", f"/jobs/{job_id}/hold", {"kind": "user" if action == "uhold" else None}, query=query))
    return _each_job(arg, lambda job_id, query: client.call("POST", f"/jobs/{job_id}/release", query=query))


def _suspend(client: Client, arg: str) -> int:
    """``suspend|resume JOBID``: minislurm does not stop a job's tasks (no SIGSTOP/SIGCONT on the
    nodes), so a running job is refused with Slurm's "presently disabled"; a pending or finished
    one gets the refusal Slurm gives it."""
    def send(job_id: int, query: dict) -> None:
        job = client.call("GET", f"/jobs/{job_id}")
        state = job.get("state")
        if state == "PENDING":
            raise ClientError(errors.JOB_PENDING)
        if state not in ("RUNNING", "SUSPENDED"):
            raise ClientError(errors.ALREADY_DONE)
        raise ClientError(errors.DISABLED)
    text = arg.split("=", 1)[1] if arg.lower().startswith(("jobid=", "job=")) else arg
    return _each_job(text, send)


def _reservation_path(name: str | None) -> str:
    """The API path of a reservation; its name is one path segment whatever it holds."""
    if not name:
        raise ClientError(errors.INVALID_RESERVATION)
    return f"/reservations/{quote(name)}"


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


def parser():
    """scontrol's own options (those of Slurm's scontrol), for help and getopt's complaint about
    any other; minislurm acts on -o and -d."""
    from minislurm.cli.helptext import LAYOUTS
    from minislurm.cli.parsing import ArgumentParser
    p = ArgumentParser(prog="scontrol", layout=LAYOUTS["scontrol"])
    for *names, value, text in [
            ("-a", "--all", False, "include hidden partitions"), ("-d", "--details", False, "add details to show"),
            ("--federation", False, "a federation's jobs (not modelled)"),
            ("-F", "--future", False, "include FUTURE nodes (not modelled)"),
            ("--hide", False, "leave out hidden partitions"), ("--local", False, "this cluster only"),
            ("-M", "--cluster", "--clusters", True, "talk to this cluster (not modelled)"),
            ("--json", False, "show job|node|partition as JSON (slurmrestd's form)"),
            ("-o", "--oneliner", False, "one line per record"), ("-Q", "--quiet", False, "errors only"),
            ("--sibling", False, "a federation's sibling jobs (not modelled)"),
            ("-u", "--uid", True, "update as this user (not modelled)"),
            ("-v", "--verbose", False, "say more"),
            ("--yaml", False, "show job|node|partition as YAML (slurmrestd's form)")]:
        p.add_argument(*names, action="store" if value else "store_true", help=text)
    return p


def _split_options(p, argv: list[str]) -> tuple[set[str], list[str]]:
    """scontrol's own options (those ``p`` declares), anywhere (getopt moves them ahead of the
    command), and the words left: ``scontrol -Q show job -o`` is ``show job`` with -Q and -o."""
    flags, takes_value = set(), set()
    for action in p._actions:
        (flags if action.nargs == 0 else takes_value).update(action.option_strings)
    given, words, i = set(), [], 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":
            words += argv[i:]
            break
        if word in flags:
            given.add(word)
        elif word.partition("=")[0] in takes_value and word.startswith("--") or word in takes_value:
            i += "=" not in word  # its value is the next word
        elif word[:2] in takes_value and not word.startswith("--"):
            pass  # -Mcluster, -u1000: the value is glued on
        else:
            words.append(word)
    return given, words


def main(argv: list[str]) -> int:
    p = parser()
    problem, asked = p.first_answer(argv)  # getopt reads every option before the command
    if problem:
        print(f'scontrol: {problem}\nTry "scontrol --help" for more information', file=sys.stderr)
        return 1
    if asked:
        sys.stdout.write(p.answer(p.info[asked]))
        return 0
    given, argv = _split_options(p, argv)
    oneliner = bool(given & {"-o", "--oneliner"})  # one line per record
    details = bool(given & {"-d", "--details"})
    # --json/--yaml before the command (as Slurm's getopt reads them) or after it
    as_doc = "yaml" if "--yaml" in given else "json" if "--json" in given else None
    if not argv or argv[0].lower() in ("help", "version"):  # without a command Slurm's reads them from stdin
        sys.stdout.write(p.answer(argv[0].lower() if argv else "help"))
        return 0 if argv else 1
    cmd, rest = argv[0].lower(), argv[1:]
    if cmd == "ping":
        return _ping()
    try:
        if cmd == "show" and rest and rest[0].lower() in ("hostnames", "hostname", "hostlist", "hostlistsorted"):
            return _show(None, rest[0], rest[1] if len(rest) > 1 else None)  # needs no controller
        client = Client()
        if cmd == "show":
            if not rest:
                print("scontrol: error: too few arguments for keyword:show", file=sys.stderr)
                return 1
            return _show(client, rest[0], rest[1] if len(rest) > 1 else None, oneliner, details, as_doc)
        if cmd in ("requeue", "requeuehold", "hold", "uhold", "release"):
            if not rest:
                print(f"scontrol: error: too few arguments for keyword:{cmd}", file=sys.stderr)
                return 1
            return _job_action(client, cmd, rest[-1])
        if len(cmd) >= 2 and "suspend".startswith(cmd) or len(cmd) >= 3 and "resume".startswith(cmd):
            if not rest:
                print(f"too few arguments for keyword:{argv[0]}", file=sys.stderr)
                return 1
            return max(_suspend(client, word) for word in rest)
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
                names = ([n["name"] for n in client.call("GET", "/nodes")["nodes"]] if node.upper() == "ALL"
                         else expand(node))  # ALL alone: every node of the cluster, as the man page says
                client.call("POST", "/nodes/update", {"names": names, "state": _lookup(pairs, "state"),
                                                      "reason": _lookup(pairs, "reason")})
            elif job:
                fields = {k: v for k, v in pairs.items() if k.lower() not in ("jobid", "job")}
                return _each_job(job, lambda job_id, query: client.call(
                    "POST", f"/jobs/{job_id}/update", fields, query=query))
            elif part and not resv:
                return _update_partition(client, part, pairs)
            elif resv:
                fields = reservation_fields({k: v for k, v in pairs.items()
                                              if k.lower() not in ("reservationname", "reservation")})
                try:
                    client.call("POST", _reservation_path(resv), fields)
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
                client.call("DELETE", _reservation_path(name))
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
