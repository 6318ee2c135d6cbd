"""Time limits, --signal and scancel on a live cluster (reference 1.2 ``-t``/``--signal``, 5.3, 6.4).

Time limits are whole minutes, so the ``-t 1`` job is submitted when the module starts and
checked by its last test; the tests in between run meanwhile.
"""

from __future__ import annotations

import re
import time

import pytest

from livekit import read_when, until

pytestmark = pytest.mark.live
CLUSTER = {"kill_wait": 2}
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"

STUBBORN = """#!/bin/bash
trap 'echo TERM $(date +%s.%N)' TERM
echo start $(date +%s.%N)
while true; do sleep 0.2; done
"""


@pytest.fixture(scope="module", autouse=True)
def limited_job(live):
    """A job that ignores SIGTERM and runs into its one-minute limit."""
    job_id = live.sbatch("-t", "1", "-J", "limited", "-o", "limited-%j.out", script=STUBBORN)
    live.wait(job_id, "RUNNING")
    return job_id


def _stamp(text: str, word: str) -> float:
    return float(re.search(rf"^{word} (\d+\.\d+)$", text, re.M).group(1))


def test_signal_reaches_the_steps_before_the_limit(live):
    script = """#!/bin/bash
trap 'echo batch-got-USR1' USR1
srun bash -c 'trap "echo step-got-USR1 \\$(date +%s.%N); exit 0" USR1; sleep 1000 & wait'
echo step-done
"""
    job_id = live.sbatch("-t", "1", "--signal=USR1@56", "-o", "sig-%j.out", script=script)
    job = live.wait(job_id, timeout=20)
    text = (live.work / f"sig-{job_id}.out").read_text()
    assert job["state"] == "COMPLETED", text
    lines = text.splitlines()
    assert lines[0].startswith("step-got-USR1 ") and lines[1:] == ["step-done"], text
    assert 3.5 <= _stamp(text, "step-got-USR1") - job["start_time"] <= 6


def test_signal_b_reaches_only_the_batch_shell(live):
    script = """#!/bin/bash
trap 'echo batch-got-USR1 $(date +%s.%N); exit 0' USR1
srun bash -c 'trap "echo step-got-USR1" USR1; sleep 1000 & wait' &
wait
"""
    job_id = live.sbatch("-t", "1", "--signal=B:USR1@57", "-o", "sigb-%j.out", script=script)
    job = live.wait(job_id, timeout=20)
    text = (live.work / f"sigb-{job_id}.out").read_text()
    assert job["state"] == "COMPLETED", text
    assert "step-got-USR1" not in text
    assert 2.5 <= _stamp(text, "batch-got-USR1") - job["start_time"] <= 5
    until(lambda: not live.job_processes(job_id), 10, "the step to be killed with its job")


def test_scancel_pending_job(live):
    job_id = live.sbatch("--begin=now+1hour", "--wrap", "true")
    until(lambda: live.job(job_id)["reason"] == "BeginTime", 5, "the pass to see the begin time")
    r = live.run("scancel", str(job_id))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    job = live.job(job_id)
    assert (job["state"], job["nodes"]) == ("CANCELLED", "")
    r = live.run("sacct", "-j", str(job_id), "-o", "JobID,State,ExitCode", "--parsable2", "-n")
    assert r.stdout == f"{job_id}|CANCELLED by 0|0:0\n"
    assert str(job_id) not in live.run("squeue", "-h", "-o", "%i").stdout.split()


ESCAPING = """#!/bin/bash
sleep 1000 &
setsid sleep 1000 &
setsid bash -c 'sleep 1000 & disown' &
nohup sleep 1000 >/dev/null 2>&1 &
srun bash -c 'setsid bash -c "sleep 1000 &"; sleep 1000' &
echo ready
wait
"""


def test_scancel_running_job_leaves_no_process(live):
    job_id = live.sbatch("-o", "esc-%j.out", script=ESCAPING)
    read_when(live.work / f"esc-{job_id}.out", lambda t: "ready" in t)
    until(lambda: len(live.job_processes(job_id)) == 8, 10, "every process of the job to start")
    r = live.run("scancel", str(job_id))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    job = live.wait(job_id, timeout=15)
    assert job["state"] == "CANCELLED"
    until(lambda: not live.job_processes(job_id), 10, f"every process of job {job_id} to end")
    text = (live.work / f"esc-{job_id}.out").read_text()
    # Slurm 22.05's words (the "DUE to SIGNAL Terminated" ending is 25.05's)
    assert re.search(rf"^slurmstepd-gpu01: error: \*\*\* JOB {job_id} ON gpu01 CANCELLED AT {STAMP} \*\*\*$",
                     text, re.M), text
    assert live.run("sacct", "-j", str(job_id), "-X", "-o", "State", "-n", "--parsable2").stdout == \
        "CANCELLED by 0\n"


def test_scancel_errors(live):
    """Slurm 22.05: silent and 0 for a plain cancel (-v shows why); 1 with a signal."""
    done = live.sbatch("--wrap", "true")
    live.wait(done)
    for job in ("999999", str(done)):
        r = live.run("scancel", job)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = live.run("scancel", "-v", str(done))
    assert (r.returncode, r.stderr) == (0, f"scancel: Terminating job {done}\nscancel: error: Kill job error on "
                                           f"job id {done}: Job/step already completing or completed\n")
    r = live.run("scancel", "-s", "USR1", "999999")
    assert (r.returncode, r.stderr) == (1, "scancel: error: Kill job error on job id 999999: "
                                           "Invalid job id specified\n")


def test_time_limit_sigterm_then_sigkill_after_killwait(live, limited_job):
    job = live.wait(limited_job, "TIMEOUT", timeout=90)
    text = (live.work / f"limited-{limited_job}.out").read_text()
    start, term = job["start_time"], _stamp(text, "TERM")
    assert 60 <= term - start < 61.5, text  # the limit: one minute from the start
    assert text.count("TERM ") == 1  # SIGTERM once, then SIGKILL
    assert 2 <= job["end_time"] - term < 3.5  # SIGKILL KillWait (2 s) after SIGTERM
    assert re.search(rf"^slurmstepd-gpu01: error: \*\*\* JOB {limited_job} ON gpu01 CANCELLED AT {STAMP} "
                     r"DUE TO TIME LIMIT \*\*\*$", text, re.M), text
    assert (job["reason"], job["time_limit"]) == ("TimeLimit", 60)
    assert not live.job_processes(limited_job)
    assert "JobState=TIMEOUT Reason=TimeLimit" in live.run("scontrol", "show", "job", str(limited_job)).stdout
    # Slurm 22.05 (the twin): the job line says 0:0, its batch step how the shell was killed
    r = live.run("sacct", "-j", str(limited_job), "-o", "JobID,State,ExitCode", "--parsable2", "-n")
    assert r.stdout == f"{limited_job}|TIMEOUT|0:0\n{limited_job}.batch|CANCELLED|0:9\n"
    r = live.run("squeue", "-t", "all", "-h", "-o", "%i %t %r", "-j", str(limited_job))
    assert r.stdout.split() == [str(limited_job), "TO", "TimeLimit"]
    assert time.time() - start < 75
