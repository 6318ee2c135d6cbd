"""scancel: cancel jobs (or signal them).  Silent on success, as Slurm is."""

from __future__ import annotations

import getpass
import os
import re
import signal as _signal
import sys

from minislurm.cli.main import ArgumentParser
from minislurm.client import Client, ClientError
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
    for text, job_id in ids:
        try:
            body = {"uid": os.getuid()}
            if signum is not None or args.batch or args.full:
                body["signal"] = signum if signum is not None else int(_signal.SIGTERM)
                body["target"] = "all" if args.full else "batch_tree" if args.batch else "steps"
            client.call("POST", f"/jobs/{job_id}/cancel", body)
        except ClientError as exc:
            print(f"scancel: error: Kill job error on job id {text}: {exc}", file=sys.stderr)
            status = 1
    return status
