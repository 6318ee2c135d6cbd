"""scancel: cancel jobs (or signal them).  Silent on success, as Slurm is.

As in Slurm 22.05, a plain cancel of an unknown or finished job is silent and exits 0 (``-v``
shows the error, still 0); with a signal the error is printed and the exit code is 1.
``-b`` signals the batch shell alone (not its children), with SIGKILL unless ``-s`` says
otherwise, so the job ends FAILED with signal 9.
"""

from __future__ import annotations

import getpass
import os
import signal as _signal
import sys

from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser
from minislurm.client import Client, ClientError, outlive_own_stop
from minislurm.core.errors import ALREADY_DONE, INVALID_JOB_ID, NOT_WHOLE_HET_JOB, NOT_WHOLE_HET_JOB_ERRNO
from minislurm.core.jobids import job_targets


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
    return [(w, job_targets(w)[1]) for w in words]


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="scancel", layout=LAYOUTS["scancel"])
    p.add_argument("job_ids", nargs="*")
    p.add_argument("-s", "--signal", metavar="name | integer", help="send this signal instead of cancelling")
    p.add_argument("-u", "--user", metavar="user_name", help="only jobs of this user")
    p.add_argument("-t", "--state", metavar="states", help="only jobs in this state (PENDING, RUNNING)")
    p.add_argument("-n", "--name", "--jobname", metavar="job_name", help="only jobs with this name")
    p.add_argument("-p", "--partition", metavar="partition", help="only jobs in this partition")
    p.add_argument("-b", "--batch", action="store_true", help="signal the batch shell alone")
    p.add_argument("-f", "--full", action="store_true", help="signal the batch shell and every step")
    p.add_argument("-v", "--verbose", action="store_true", help="say what is done to each job")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        signum = _signum(args.signal) if args.signal else None
        targets = _job_ids(args.job_ids)
    except ValueError as exc:
        print(f"scancel: error: {exc}", file=sys.stderr)
        return 1
    client = Client()
    try:
        # (text, job id, array task or None): an array's own id names every task (the
        # controller's answer to it), ``A_3`` one task, however the controller numbers it.
        ids: list[tuple[str, int, int | None]] = []
        for text, tasks in targets:
            base = int(text.split("_")[0].split(".")[0])
            ids += [(text, base, None)] if tasks is None else [(f"{base}_{t}", base, t) for t in tasks]
        if args.user or args.state or args.name or args.partition:
            query = {"user": args.user or (getpass.getuser() if not targets else None), "partition": args.partition}
            if args.state:
                query["states"] = {"PD": "PENDING", "R": "RUNNING"}.get(args.state.upper(), args.state.upper())
            jobs = client.call("GET", "/jobs", query=query)["jobs"]
            chosen = [j for j in jobs
                      if j["state"] in ("PENDING", "RUNNING") and (not args.name or j["name"] == args.name)]
            if targets:  # only what the ids name and the filters keep: a task at a time
                named = [j for j in chosen if any(
                    (task is None and base in (j["job_id"], j["array_job_id"]))
                    or (task is not None and (base, task) == (j["array_job_id"], j["array_task_id"]))
                    for _, base, task in ids)]
            else:
                named = chosen
            ids = sorted({(j["display_id"], j["array_job_id"], j["array_task_id"]) if j["array_job_id"] is not None
                          else (str(j["job_id"]), j["job_id"], None) for j in named}, key=lambda x: (x[1], x[2] or 0))
        if not ids and not targets:
            print("scancel: error: No job identification provided", file=sys.stderr)
            return 1
    except ClientError as exc:
        print(f"scancel: error: {exc}", file=sys.stderr)
        return 1
    status = 0
    plain = signum is None and not args.batch and not args.full
    outlive_own_stop()
    for text, job_id, task in ids:
        if args.verbose:
            print(f"scancel: Terminating job {text}", file=sys.stderr)
        try:
            body = {"uid": os.getuid()}
            if not plain:
                default = _signal.SIGKILL if args.batch else _signal.SIGTERM
                body["signal"] = signum if signum is not None else int(default)
                body["target"] = "all" if args.full else "batch_scancel" if args.batch else "steps"
            client.call("POST", f"/jobs/{job_id}/cancel", body, query={"task": task})
        except ClientError as exc:
            quiet = plain and str(exc) in (INVALID_JOB_ID, ALREADY_DONE)
            if args.verbose or not quiet:
                print(f"scancel: error: Kill job error on job id {text}: {exc}", file=sys.stderr)
            status = status if quiet else NOT_WHOLE_HET_JOB_ERRNO & 0xFF if str(exc) == NOT_WHOLE_HET_JOB else 1
    return status
