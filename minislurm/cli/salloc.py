"""salloc: get an allocation, run a command (by default a shell) in it, then give it back.

As in Slurm, the command runs where salloc runs (the login host), not on the allocated nodes:
the allocation is reached with ``srun``, which finds it through ``SLURM_JOB_ID``.  Messages
and exit codes are Slurm 22.05's (checked on the real-Slurm twin): ``salloc: Granted job
allocation N`` on stderr, ``Pending job allocation N`` and ``job N queued and waiting for
resources`` when it must wait, ``Relinquishing job allocation N`` at the end, and the
command's exit status as salloc's own.  Simplification: the job's environment holds the
allocation's variables below; Slurm sets a few more (``SLURM_TASKS_PER_NODE``, ...).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

from minislurm.cli.jobhelp import early_answer
from minislurm.client import Client, ClientError
from minislurm.cli.allocation import immediate_seconds, keep_alive, release, wait_immediate
from minislurm.core.options import combine, env_options, parse_options, refuse_hetjob
from minislurm.core.optvalues import OptionError
from minislurm.core.spec import spec_to_dict


def allocation_env(job: dict) -> dict[str, str]:
    """What the command learns about its allocation (the ``SLURM_*`` output variables)."""
    env = {"SLURM_JOB_ID": job["job_id"], "SLURM_JOBID": job["job_id"], "SLURM_JOB_NAME": job.get("name", ""),
           "SLURM_JOB_NODELIST": job["nodes"], "SLURM_NODELIST": job["nodes"],
           "SLURM_JOB_NUM_NODES": job["num_nodes"], "SLURM_NNODES": job["num_nodes"],
           "SLURM_JOB_PARTITION": job.get("partition", ""), "SLURM_JOB_ACCOUNT": job.get("account", ""),
           "SLURM_SUBMIT_DIR": os.getcwd(), "SLURM_SUBMIT_HOST": socket.gethostname()}
    if job.get("ntasks_given"):
        env.update(SLURM_NTASKS=job["num_tasks"], SLURM_NPROCS=job["num_tasks"])
    if job.get("cpus_per_task_given"):  # only set, not read by srun since 22.05 (SRUN_CPUS_PER_TASK is)
        env["SLURM_CPUS_PER_TASK"] = job["cpus_per_task_given"]
    return {k: str(v) for k, v in env.items()}


def _wait_for_start(client: Client, job_id: int) -> dict:
    job = client.call("GET", f"/jobs/{job_id}/wait", query={"until": "start", "timeout": 0.5})
    if job["state"] == "PENDING":
        print(f"salloc: Pending job allocation {job_id}", file=sys.stderr)
        print(f"salloc: job {job_id} queued and waiting for resources", file=sys.stderr)
        while job["state"] == "PENDING":
            job = client.call("GET", f"/jobs/{job_id}/wait", query={"until": "start", "timeout": 30}, timeout=60)
        if job["state"] == "RUNNING":
            print(f"salloc: job {job_id} has been allocated resources", file=sys.stderr)
    return job


def main(argv: list[str]) -> int:
    if (answered := early_answer("salloc", argv)) is not None:  # --help, --usage, --version
        return answered
    now = time.time()
    try:
        cli, rest = parse_options(argv, prog="salloc", now=now)
        refuse_hetjob("salloc", rest, het_group="het-group" in cli.extra)
        spec = combine(None, env_options(os.environ, prog="salloc", now=now), cli, prog="salloc")
    except OptionError as exc:
        print(exc.text, file=sys.stderr)
        return exc.exit_code
    command = rest or [os.environ.get("SHELL") or "/bin/sh"]
    client = Client()
    try:
        reply = client.call("POST", "/jobs", {
            "spec": spec_to_dict(spec), "batch": False, "environment": {}, "work_dir": os.getcwd(),
            "uid": os.getuid(), "gid": os.getgid(), "submit_host": socket.gethostname(),
            "default_name": spec.job_name or "interactive", "command": " ".join(command)})
    except ClientError as exc:
        print(f"salloc: error: Job submit/allocate failed: {exc}", file=sys.stderr)
        return 1
    job_id = reply["job_id"]
    try:
        immediate = immediate_seconds(spec)
        job = _wait_for_start(client, job_id) if immediate is None else wait_immediate(client, job_id, immediate)
    except ClientError as exc:
        print(f"salloc: error: Unable to allocate resources: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        client.call("DELETE", f"/jobs/{job_id}")
        print(f"salloc: Job allocation {job_id} has been revoked.", file=sys.stderr)
        return 1
    if job["state"] != "RUNNING":
        print(f"salloc: Job allocation {job_id} has been revoked.", file=sys.stderr)
        return 1
    print(f"salloc: Granted job allocation {job_id}", file=sys.stderr, flush=True)
    threading.Thread(target=keep_alive, args=(job_id,), daemon=True).start()
    job["ntasks_given"] = spec.ntasks is not None
    job["cpus_per_task_given"] = spec.cpus_per_task
    env = dict(os.environ, **allocation_env(job))
    # The shell owns the terminal; salloc itself ignores Ctrl-C while it waits for it, as Slurm's does.
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = subprocess.call(command, env=env)
    except OSError as exc:
        print(f"salloc: error: {command[0]}: {exc.strerror}", file=sys.stderr)
        code = 1
    finally:
        signal.signal(signal.SIGINT, old)
    print(f"salloc: Relinquishing job allocation {job_id}", file=sys.stderr, flush=True)
    release(client, job_id, code if code >= 0 else 128 - code)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
