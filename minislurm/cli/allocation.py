"""An interactive allocation from the command line (srun outside a job, and salloc): asked for,
confirmed, kept alive while its command runs, and given back."""

from __future__ import annotations

import os
import socket
import sys
import time

from minislurm.client import Client, ClientError
from minislurm.core import errors
from minislurm.core.spec import spec_to_dict

RELEASE_PATIENCE = 120.0  # seconds srun keeps trying to give its allocation back


def immediate_seconds(spec) -> float | None:
    """``--immediate[=secs]``: how long srun or salloc waits for its allocation before giving up
    (1 second without a value, as Slurm's default); None: as long as it takes."""
    value = spec.extra.get("immediate")
    if value is None:
        return None
    try:
        seconds = int(value) if value else 1
    except ValueError:
        seconds = 1
    return float(max(seconds, 1))


def wait_immediate(client: Client, job_id: int, seconds: float) -> dict:
    """Wait at most ``seconds`` for the job to start; if it has not, take the request back and
    raise ClientError(errors.NODES_BUSY), the words srun and salloc then print, as Slurm's do."""
    deadline = time.monotonic() + seconds
    job = client.call("GET", f"/jobs/{job_id}/wait", query={"until": "start", "timeout": min(seconds, 30)})
    while job["state"] == "PENDING" and time.monotonic() < deadline:
        left = min(deadline - time.monotonic(), 30)
        job = client.call("GET", f"/jobs/{job_id}/wait", query={"until": "start", "timeout": max(left, 0.05)},
                          timeout=60)
    if job["state"] == "PENDING":
        release(client, job_id, 1)
        raise ClientError(errors.NODES_BUSY)
    return job


def allocate(client: Client, spec, argv: list[str]) -> int:
    """No allocation yet: ask for one and wait for it, saying so if it does not come at once
    (with ``--immediate``, not longer than it says: :func:`wait_immediate`)."""
    name = spec.job_name or os.path.basename(argv[0])
    reply = client.call("POST", "/jobs", {
        "spec": spec_to_dict(spec), "batch": False, "environment": {}, "work_dir": os.getcwd(),
        "uid": os.getuid(), "gid": os.getgid(), "submit_host": socket.gethostname(),
        "default_name": name, "command": " ".join(argv)})
    job_id = reply["job_id"]
    immediate = immediate_seconds(spec)
    if immediate is not None:
        job = wait_immediate(client, job_id, immediate)
    else:
        job = client.call("GET", f"/jobs/{job_id}/wait", query={"until": "start", "timeout": 0.5})
    if job["state"] == "PENDING":
        if str(job.get("reason") or "").startswith("ReqNodeNotAvail"):  # the words of its error code
            print("srun: Required node not available (down, drained or reserved)", file=sys.stderr)
        print(f"srun: job {job_id} queued and waiting for resources", file=sys.stderr)
        while job["state"] == "PENDING":
            job = client.call("GET", f"/jobs/{job_id}/wait", query={"until": "start", "timeout": 30}, timeout=60)
        if job["state"] == "RUNNING":
            print(f"srun: job {job_id} has been allocated resources", file=sys.stderr)
    if job["state"] != "RUNNING":
        # As 22.05's srun: the wait ends, says why if the job was cancelled, and the allocation
        # request it then retries is refused: the job is already over.
        if job["state"] == "CANCELLED":
            print("srun: Job has been cancelled", file=sys.stderr)
        raise ClientError(errors.ALREADY_DONE)
    return job_id


def call_until_heard(client: Client, path: str, body: dict, patience: float = RELEASE_PATIENCE) -> bool:
    """POST ``body`` until the controller has it (it may be restarting), for up to ``patience``
    seconds; a refusal is final.  Without this, an allocation would outlive its srun."""
    delay, deadline = 0.2, time.monotonic() + patience
    while True:
        try:
            client.call("POST", path, body)
            return True
        except ClientError as exc:
            if exc.status not in (0, 503) or time.monotonic() > deadline:  # 503: state not saved yet
                return False
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


def keep_alive(job_id: int) -> None:
    """Tell the controller this srun still holds its allocation (slurmctld pings srun instead);
    after InactiveLimit without a word, the controller ends the allocation."""
    client = Client()
    try:
        limit = float(str(client.call("GET", "/config")["config"].get("InactiveLimit", "0")).split()[0])
    except (ClientError, ValueError):
        limit = 0.0
    while True:
        time.sleep(min(30.0, max(0.5, limit / 4)) if limit else 30.0)
        try:
            client.call("POST", f"/jobs/{job_id}/alive")
        except ClientError:
            pass


def existing_allocation(client: Client, job_id: int, nodes: int | None) -> bool:
    """Inside an allocation srun first looks it up (``existing_allocation`` in src/srun/allocate.c)
    and checks a ``-N`` against it (``_job_create_structure`` in src/srun/srun_job.c)."""
    hint = f"srun: Check SLURM_JOB_ID environment variable. Expired or invalid job {job_id}"
    try:
        job = client.call("GET", f"/jobs/{job_id}")
    except ClientError as exc:
        print(f"srun: error: Unable to confirm allocation for job {job_id}: {exc}\n{hint}", file=sys.stderr)
        return False
    if job["state"] == "PENDING":
        print(f"srun: error: Unable to confirm allocation for job {job_id}: Job is pending execution\n{hint}",
              file=sys.stderr)
        return False
    if job["state"] != "RUNNING":
        print(f"srun: error: Slurm job {job_id} has expired\n{hint}", file=sys.stderr)
        return False
    if nodes and nodes > job["num_nodes"]:
        print(f"srun: error: Only allocated {job['num_nodes']} nodes asked for {nodes}", file=sys.stderr)
        return False
    return True


def release(client: Client, job_id: int, code: int) -> None:
    body = {"exit_code": code if code < 128 else 0, "signal": code - 128 if code > 128 else 0, "uid": os.getuid()}
    if not call_until_heard(client, f"/jobs/{job_id}/complete", body):
        print(f"srun: error: Unable to release the allocation of job {job_id}; it ends at its time limit "
              "or InactiveLimit", file=sys.stderr)
