"""Commit, then tell, for stops (issue 21, item 5): a job's script hears of ``scancel`` or
``scontrol requeue`` only once the intent is on disk, so a controller killed before it saved
one has told nobody, and one killed right after its acknowledgement still ends the job as it
said; and a job that requeues itself is answered before it is stopped (as slurmctld does).

Commits are slowed down with ``MINISLURM_COMMIT_DELAY`` (the store's fault injection) so that
a node ping lands between a stop's decision and its commit: before, the ping's reply sent the
stop at once (``health.fence``), up to seconds before the commit.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from livekit import read_when, until

pytestmark = pytest.mark.live
DELAY = 4.0  # seconds each commit takes in these tests: longer than a ping round (SlurmdTimeout/3)
SLOW = {"MINISLURM_COMMIT_DELAY": str(DELAY)}
STOPS = {"scancel": ("scancel",), "requeue": ("scontrol", "requeue")}


def stamped(marker) -> str:
    """A batch script that notes when it gets SIGTERM (then ends after a second, exit 0), and
    in a second run (after a requeue) only that it ran."""
    return ("#!/bin/bash\n"
            f"if [ \"$SLURM_RESTART_COUNT\" = 1 ]; then echo second run >> {marker}; exit 0; fi\n"
            f"trap 'echo TERM $(date +%s.%N) >> {marker}; sleep 1; exit 0' TERM\n"
            "echo started\nsleep 120 & wait\n")


def term_times(marker) -> list[float]:
    text = marker.read_text() if marker.exists() else ""
    return [float(line.split()[1]) for line in text.splitlines() if line.startswith("TERM ")]


def ended_as_told(live, how: str, job: int) -> None:
    if how == "scancel":
        assert live.wait(job, timeout=30)["state"] == "CANCELLED"
    else:
        done = live.wait(job, "COMPLETED", timeout=40)
        assert done["restart_count"] >= 1, done
        states = live.run("sacct", "-D", "-X", "-n", "-P", "-j", str(job), "-o", "State").stdout.split()
        assert states[0] == "REQUEUED", states


def slow_controller(live) -> None:
    live.reset()
    live.c.restart_controller(crash=True, env=SLOW)
    live.api.close()


def crash(live) -> None:
    """kill -9 the controller and start it again at normal speed."""
    live.c.restart_controller(crash=True)
    live.api.close()


def started_job(live, marker) -> int:
    job = live.sbatch("-o", f"{marker.stem}-%j.out", script=stamped(marker))
    read_when(live.work / f"{marker.stem}-{job}.out", lambda t: "started" in t, timeout=60)
    return job


@pytest.mark.parametrize("how", sorted(STOPS))
def test_the_script_hears_of_a_stop_only_once_it_is_saved(live, how):
    """The acknowledgement comes after the commit (>= DELAY s), and so does the SIGTERM; the
    controller killed right after acknowledging still ends the job as it said."""
    slow_controller(live)
    marker = live.work / f"told-{how}.txt"
    job = started_job(live, marker)
    asked = time.time()
    r = live.run(*STOPS[how], str(job))
    assert r.returncode == 0, r.stderr
    crash(live)
    ended_as_told(live, how, job)
    told = term_times(marker)
    assert told, marker.read_text()
    # Nothing can be on disk before ``asked + DELAY``: a signal earlier was sent before its commit.
    assert told[0] >= asked + DELAY, f"SIGTERM {asked + DELAY - told[0]:.2f} s before the commit"


@pytest.mark.parametrize("how", sorted(STOPS))
def test_a_stop_the_controller_did_not_save_is_never_told(live, how):
    """The controller dies while the stop is being saved: it was not acknowledged, so the
    restarted controller knows nothing of it, and the script must never have heard of it
    (before: SIGTERM came with the next ping, and the job ended COMPLETED, Restarts=0)."""
    slow_controller(live)
    marker = live.work / f"unsaved-{how}.txt"
    job = started_job(live, marker)
    asked = time.time()
    stop = subprocess.Popen([str(live.c.dir / "bin" / STOPS[how][0]), *STOPS[how][1:], str(job)],
                            env=live.c.env(), cwd=live.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Kill it all before the stop's commit can have ended (asked + DELAY), or as soon as the
    # script was told anyway.
    until(lambda: term_times(marker) or time.time() > asked + DELAY - 1.0, DELAY, "the moment to crash")
    assert stop.poll() is None, "acknowledged before its commit"
    stop.kill()  # never acknowledged: it must not try again with the restarted controller
    stop.wait()
    assert time.time() < asked + DELAY
    crash(live)
    node = live.job(job)["nodes"]
    # Once the restarted controller has heard from the job's agent (health.fence ran), the
    # script still runs, untold.
    until(lambda: "*" not in live.run("sinfo", "-h", "-n", node, "-o", "%t").stdout, 20, "the agent to answer")
    assert term_times(marker) == [] and live.job(job)["state"] == "RUNNING", (marker.exists() and marker.read_text(),
                                                                               live.job(job))
    assert live.run("scancel", str(job)).returncode == 0
    assert live.wait(job, timeout=30)["state"] == "CANCELLED"
    assert len(term_times(marker)) == 1


def test_a_job_that_requeues_itself_is_answered_before_it_is_stopped(live):
    """``scontrol requeue $SLURM_JOB_ID`` inside the job exits 0, every time: slurmctld answers
    the request, then signals the job (before: scontrol was often killed by the SIGTERM it
    asked for, exit status 143, and submitit recorded a failed job)."""
    live.reset()
    script = ("#!/bin/bash\n"
              "out=self-$SLURM_JOB_ID.txt\n"
              "if [ \"$SLURM_RESTART_COUNT\" = 1 ]; then echo second run >> $out; exit 0; fi\n"
              "trap 'echo TERM >> $out' TERM\n"  # noted, not obeyed: the script goes on
              "scontrol requeue $SLURM_JOB_ID\necho rc=$? >> $out\nsleep 60 & wait\n")
    jobs = [live.sbatch("-o", "/dev/null", script=script) for _ in range(8)]
    for job in jobs:
        ended_as_told(live, "requeue", job)
    runs = {job: (live.work / f"self-{job}.txt").read_text().split("\n")[:-1] for job in jobs}
    assert all(lines[-1] == "second run" for lines in runs.values()), runs
    codes = [[line for line in lines if line.startswith("rc=")] for lines in runs.values()]
    assert codes == [["rc=0"]] * len(jobs), f"{codes.count(['rc=0'])} of {len(jobs)} exited 0: {runs}"
