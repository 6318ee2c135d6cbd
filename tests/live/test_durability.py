"""Commit, then tell: what the controller acknowledged survives its crash (kill -9), and nobody
hears of a change before it is on disk (issue 9, defects 4-7).

Several tests slow every commit down (``MINISLURM_COMMIT_DELAY``, the store's fault injection)
and kill the controller in the window where a change is decided but not yet saved.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pytest

from livekit import read_when, until

pytestmark = pytest.mark.live
CLUSTER = {"inactive_limit": 3}
SLOW = {"MINISLURM_COMMIT_DELAY": "1.5"}


def crash_and_restart(live, env=None):
    live.c.restart_controller(crash=True, env=env)
    live.api.close()


def blocker(live) -> int:
    """A job holding every GPU of both nodes, so that the next job waits."""
    job = live.sbatch("-N2", "--gres=gpu:4", "--exclusive", "--wrap", "sleep 300")
    live.wait(job, "RUNNING")
    return job


def test_an_acknowledged_scancel_survives_a_crash(live):
    live.reset()
    script = "#!/bin/bash\ntrap 'sleep 2; echo trapped; exit 0' TERM\necho started\nsleep 60 & wait\n"
    job = live.sbatch("-o", "cancel-%j.out", script=script)
    read_when(live.work / f"cancel-{job}.out", lambda t: "started" in t)
    assert live.run("scancel", str(job)).returncode == 0
    crash_and_restart(live)  # the script is still in its trap, so its end is reported later
    done = live.wait(job, timeout=20)
    assert (done["state"], done["restart_count"]) == ("CANCELLED", 0)
    r = live.run("sacct", "-X", "-n", "-P", "-j", str(job), "-o", "State")
    assert r.stdout.startswith("CANCELLED by ")


def test_an_acknowledged_requeue_survives_a_crash(live):
    live.reset()
    script = ("#!/bin/bash\nif [ \"$SLURM_RESTART_COUNT\" = 1 ]; then echo second run; exit 0; fi\n"
              "trap 'sleep 2; exit 0' TERM\necho first run\nsleep 60 & wait\n")
    job = live.sbatch("-o", "requeue-%j.out", "--open-mode=append", script=script)
    read_when(live.work / f"requeue-{job}.out", lambda t: "first run" in t)
    assert live.run("scontrol", "requeue", str(job)).returncode == 0
    crash_and_restart(live)
    done = live.wait(job, "COMPLETED", timeout=30)
    assert done["restart_count"] == 1
    r = live.run("sacct", "-D", "-X", "-n", "-P", "-j", str(job), "-o", "State")
    assert r.stdout.split() == ["REQUEUED", "COMPLETED"]
    lines = (live.work / f"requeue-{job}.out").read_text().splitlines()
    assert lines[0] == "first run" and lines[-1] == "second run", lines
    # slurmstepd's line once: the restarted controller's reminder neither repeats it nor SIGTERM
    assert len(lines) == 3 and re.fullmatch(rf"slurmstepd-gpu0\d: error: \*\*\* JOB {job} ON gpu0\d CANCELLED AT \S+ "
                                            r"DUE TO JOB REQUEUE \*\*\*", lines[1]), lines


def test_srun_hears_of_its_allocation_only_once_it_is_saved(live):
    live.reset()
    crash_and_restart(live, env=SLOW)
    first = blocker(live)
    srun = subprocess.Popen([str(live.c.dir / "bin" / "srun"), "-N1", "-J", "durable", "sleep", "5"],
                            env=live.c.env(), cwd=live.work, stderr=subprocess.PIPE, text=True)
    try:
        assert "queued and waiting for resources" in srun.stderr.readline()
        assert live.run("scancel", str(first)).returncode == 0
        line = srun.stderr.readline()  # the moment srun is told, srun and the controller die
        told_at = time.time()
        srun.kill()
        crash_and_restart(live)
        assert "has been allocated resources" in line
        job = next(j for j in live.api.call("GET", "/jobs")["jobs"] if j["name"] == "durable")
        # Saved before srun heard of it: the restarted controller knows that start, and did
        # not have to make one of its own.
        assert job["state"] != "PENDING" and job["start_time"] <= told_at, job
    finally:
        srun.kill()
        srun.wait()


def test_a_batch_script_starts_only_once_its_start_is_saved(live):
    live.reset()
    crash_and_restart(live, env=SLOW)
    first = blocker(live)
    marker = live.work / "starts.txt"
    job = live.sbatch("--wrap", f"echo $SLURM_RESTART_COUNT >> {marker}; sleep 4")
    assert live.run("scancel", str(first)).returncode == 0
    read_when(marker)  # the script has started: the controller dies now
    crash_and_restart(live)
    done = live.wait(job, timeout=30)
    assert (done["state"], done["restart_count"]) == ("COMPLETED", 0)
    assert marker.read_text() == "0\n"  # one run, never killed and started again


def test_steps_survive_a_controller_restart(live):
    live.reset()
    job = live.sbatch("-o", "step-%j.out", "--wrap", "srun sleep 4")
    until(lambda: any(r["step"] == "0" and r["state"] == "RUNNING" for r in live.acct(job)), 15, "step 0")
    crash_and_restart(live)
    assert live.wait(job, timeout=20)["state"] == "COMPLETED"
    rows = {r["step"] or "job": r["state"] for r in live.acct(job)}
    assert rows == {"job": "COMPLETED", "batch": "COMPLETED", "0": "COMPLETED"}


def test_srun_gives_its_allocation_back_after_a_controller_outage(live):
    live.reset()
    srun = subprocess.Popen([str(live.c.dir / "bin" / "srun"), "-N1", "-J", "outage", "sleep", "2"],
                            env=live.c.env(), cwd=live.work, stderr=subprocess.PIPE, text=True)
    try:
        job = until(lambda: next((j for j in live.api.call("GET", "/jobs")["jobs"]
                                  if j["name"] == "outage" and j["state"] == "RUNNING"), None), 10, "srun's job")
        # Its step must have started: before that, srun (like Slurm's) waits only MessageTimeout
        # for a controller it cannot reach, and the restart below may take longer under load.
        until(lambda: any(r["step"] == "0" for r in live.acct(job["job_id"])),
              30, "srun's step")
        live.c.restart_controller(pause=4)  # srun ends while there is no controller
        assert srun.wait(timeout=60) == 0, srun.stderr.read()
    finally:
        srun.kill()
    done = live.wait(job["job_id"], timeout=10)
    assert (done["state"], done["exit_code"]) == ("COMPLETED", "0:0")


def test_an_allocation_whose_srun_died_ends_after_inactive_limit(live):
    live.reset()
    srun = subprocess.Popen([str(live.c.dir / "bin" / "srun"), "-N1", "-J", "orphan", "sleep", "60"],
                            env=live.c.env(), cwd=live.work, stderr=subprocess.DEVNULL)
    job = until(lambda: next((j for j in live.api.call("GET", "/jobs")["jobs"]
                              if j["name"] == "orphan" and j["state"] == "RUNNING"), None), 10, "srun's job")
    time.sleep(4)  # longer than InactiveLimit: srun keeps the allocation alive while it lives
    assert live.job(job["job_id"])["state"] == "RUNNING"
    os.kill(srun.pid, signal.SIGKILL)
    srun.wait()
    done = live.wait(job["job_id"], timeout=15)
    assert (done["state"], done["reason"]) == ("TIMEOUT", "InactiveLimit")
    live.idle()


def test_state_files_are_private(live):
    state = live.c.dir / "state"
    assert oct(os.stat(state).st_mode & 0o777) == "0o700"
    for f in state.iterdir():
        assert oct(os.stat(f).st_mode & 0o777) == "0o600", f
