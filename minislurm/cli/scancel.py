"""scancel: cancel jobs (or signal them).  Silent on success, as Slurm is.

As in Slurm 22.05, a plain cancel of an unknown or finished job is silent and exits 0 (``-v``
shows the error, still 0); with a signal the error is printed and the exit code is 1.
``-b`` signals the batch shell alone (not its children), with SIGKILL unless ``-s`` says
otherwise, so the job ends FAILED with signal 9.
"""

from __future__ import annotations

import getpass
import os
import re
import signal as _signal
import sys

from minislurm.cli.main import ArgumentParser
from minislurm.client import Client, ClientError, outlive_own_stop
from minislurm.core.errors import ALREADY_DONE, INVALID_JOB_ID
from minislurm.core.hostlist import expand


def _signum(text: str) -> int:
    name = text.upper().removeprefix("SIG")
    if name.isdigit():
        return int(name)
    try:
        return int(getattr(_signal, "SIG" + name))
    except AttributeError:
        raise ValueError(f"Unknown job signal: {text}") from None


def _job_ids(words: list[str]) -> list[tuple[str, list[int] | None]]:
    """``12``, ``12_3``, ``12_[1-3]`` -> (text, [array task indices] or None)."""
    out = []
    for w in words:
        m = re.fullmatch(r"(\d+)(?:_(\d+|\[[\d,\-]+\]))?(?:\.\d+)?", w)
        if not m:
            raise ValueError(f"Invalid job id {w}")
        part, tasks = m.group(2), None
        if part:
            tasks = [int(h[1:]) for h in expand("x" + part)] if part.startswith("[") else [int(part)]
        out.append((w, tasks))
    return out


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="scancel")
    p.add_argument("job_ids", nargs="*")
    p.add_argument("-s", "--signal")
    p.add_argument("-u", "--user")
    p.add_argument("-t", "--state")
    p.add_argument("-n", "--name", "--jobname")
    p.add_argument("-p", "--partition")
    p.add_argument("-b", "--batch", action="store_true")
    p.add_argument("-f", "--full", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    try:
        signum = _signum(args.signal) if args.signal else None
        targets = _job_ids(args.job_ids)
    except ValueError as exc:
        print(f"scancel: error: {exc}", file=sys.stderr)
        return 1
    client = Client()
    try:
        ids: list[tuple[str, int]] = []
        if targets:
            for text, tasks in targets:
                base = int(text.split("_")[0].split(".")[0])
                if tasks is None:
                    ids.append((text, base))
                    continue
                jobs = client.call("GET", "/jobs", query={"ids": str(base)})["jobs"]
                for j in jobs:
                    if j["array_job_id"] == base and j["array_task_id"] in tasks:
                        ids.append((f"{base}_{j['array_task_id']}", j["job_id"]))
        if args.user or args.state or args.name or args.partition:
            query = {"user": args.user or (getpass.getuser() if not targets else None), "partition": args.partition}
            if args.state:
                query["states"] = {"PD": "PENDING", "R": "RUNNING"}.get(args.state.upper(), args.state.upper())
            jobs = client.call("GET", "/jobs", query=query)["jobs"]
            chosen = {(str(j["job_id"]), j["job_id"]) for j in jobs
                      if j["state"] in ("PENDING", "RUNNING") and (not args.name or j["name"] == args.name)}
            ids = sorted(chosen | set(ids)) if not targets else [x for x in ids if x in chosen]
        if not ids and not targets:
            print("scancel: error: No job identification provided", file=sys.stderr)
            return 1
    except ClientError as exc:
        print(f"scancel: error: {exc}", file=sys.stderr)
        return 1
    status = 0
    plain = signum is None and not args.batch and not args.full
    outlive_own_stop()
    for text, job_id in ids:
        if args.verbose:
            print(f"scancel: Terminating job {text}", file=sys.stderr)
        try:
            body = {"uid": os.getuid()}
            if not plain:
                default = _signal.SIGKILL if args.batch else _signal.SIGTERM
                body["signal"] = signum if signum is not None else int(default)
                body["target"] = "all" if args.full else "batch_scancel" if args.batch else "steps"
            client.call("POST", f"/jobs/{job_id}/cancel", body)
        except ClientError as exc:
            quiet = plain and str(exc) in (INVALID_JOB_ID, ALREADY_DONE)
            if args.verbose or not quiet:
                print(f"scancel: error: Kill job error on job id {text}: {exc}", file=sys.stderr)
            status = status if quiet else 1
    return status
