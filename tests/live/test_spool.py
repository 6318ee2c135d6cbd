"""The agents' spools (issue 21, item 4): a job's folder goes when its run ends on the node, so
thousands of jobs leave nothing behind, and a spool too full for a script fails that job while
the node stays up for everyone else.

The cluster's two nodes are virtual nodes of one agent process (each has its own spool,
``spool/<node>``), as in the class's large clusters.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from livekit import read_when, until

pytestmark = pytest.mark.live
CLUSTER = {"nodes_per_agent": 2}


def folders(live, node: str) -> list[str]:
    """The job folders in a node's spool."""
    spool = live.c.dir / "spool" / node
    return sorted(p.name for p in spool.iterdir() if p.name.startswith(("job", ".stale-job"))) if spool.exists() else []


def gone(live, job: int, node: str = "gpu01") -> None:
    until(lambda: f"job{job:05d}" not in folders(live, node), 10, f"job {job}'s spool folder to go")


def test_a_jobs_spool_folder_goes_when_its_run_ends(live):
    live.reset()
    ok = live.sbatch("-w", "gpu01", "-o", "/dev/null", "--wrap", "true")
    failed = live.sbatch("-w", "gpu01", "-o", "/dev/null", "--wrap", "exit 3")
    two = live.sbatch("-N2", "-o", "/dev/null", "--wrap", "srun true")
    for job, state in ((ok, "COMPLETED"), (failed, "FAILED"), (two, "COMPLETED")):
        assert live.wait(job)["state"] == state
        gone(live, job)
    cancelled = live.sbatch("-w", "gpu01", "-o", "cancel-%j.out", "--wrap", "echo up; sleep 60")
    read_when(live.work / f"cancel-{cancelled}.out", lambda t: "up" in t)
    assert f"job{cancelled:05d}" in folders(live, "gpu01")  # the test looks where the scripts are
    assert live.run("scancel", str(cancelled)).returncode == 0
    assert live.wait(cancelled)["state"] == "CANCELLED"
    gone(live, cancelled)
    assert folders(live, "gpu01") == [] and folders(live, "gpu02") == []


def test_a_requeued_job_runs_from_its_own_script_and_leaves_nothing(live):
    live.reset()
    script = ("#!/bin/bash\nif [ \"$SLURM_RESTART_COUNT\" = 1 ]; then echo second run; exec sleep 60; fi\n"
              "echo first run\nsleep 60\n")
    job = live.sbatch("-w", "gpu01", "-o", "requeue-%j.out", "--open-mode=append", script=script)
    out = live.work / f"requeue-{job}.out"
    read_when(out, lambda t: "first run" in t)
    assert live.run("scontrol", "requeue", str(job)).returncode == 0
    read_when(out, lambda t: "second run" in t)
    assert folders(live, "gpu01") == [f"job{job:05d}"]  # the first run's end left the second's script
    assert live.run("scancel", str(job)).returncode == 0
    assert live.wait(job)["state"] == "CANCELLED"
    gone(live, job)
    assert folders(live, "gpu01") == []


def test_a_rebooted_agent_clears_what_was_left_before(live):
    live.reset()
    spool = live.c.dir / "spool" / "gpu01"
    (spool / "job99999").mkdir()
    (spool / "job99999" / "slurm_script").write_text("#!/bin/sh\n")
    (spool / "notes").write_text("not a job's\n")
    live.c.crash_node("gpu01")
    until(lambda: live.node("gpu01")["state"].startswith("down"), 30, "gpu01 to be down")
    live.reset()  # boots it again
    assert folders(live, "gpu01") == [] and (spool / "notes").read_text() == "not a job's\n"
    (spool / "notes").unlink()


@pytest.fixture
def small_spool(live, request):
    """gpu02's spool on a tiny file system (root only: it mounts a tmpfs); ``full`` fills it,
    ``read-only`` makes it one nothing can be written to."""
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    spool = live.c.dir / "spool" / "gpu02"
    spool.mkdir(parents=True, exist_ok=True)
    opts = "size=64k,mode=0755" + (",ro" if request.param == "read-only" else "")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(spool)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        if request.param == "full":
            subprocess.run(["dd", "if=/dev/zero", f"of={spool / 'filler'}", "bs=4k"], capture_output=True)
        yield spool
    finally:
        subprocess.run(["umount", "-l", str(spool)], check=False)


@pytest.mark.parametrize("small_spool", ["full"], indirect=True)
def test_a_full_spool_fails_the_job_and_leaves_the_node_up(live, small_spool):
    """Jobs filled it (their scripts, what they wrote into their folders): the job that does not
    fit fails, JobLaunchFailure, and nobody else loses the node (before: drained, "batch job
    complete failure", for everyone)."""
    live.reset()
    job = live.sbatch("-w", "gpu02", "--wrap", "true")
    done = live.wait(job)
    assert (done["state"], done["reason"], done["restart_count"]) == ("FAILED", "JobLaunchFailure", 0)
    node = live.node("gpu02")
    assert (node["state"], node["reason"]) == ("idle", None), node
    assert folders(live, "gpu02") == []  # nothing half-written is left
    log = (live.c.dir / "log" / "slurmctld.log").read_text()
    assert f"job{job:05d}: No space left on device" in log
    ok = live.sbatch("-w", "gpu01", "-o", "/dev/null", "--wrap", "true")  # the cluster goes on
    assert live.wait(ok)["state"] == "COMPLETED"


@pytest.mark.parametrize("small_spool", ["read-only"], indirect=True)
def test_a_spool_that_cannot_be_written_is_the_nodes_fault(live, small_spool):
    """Not a job's doing: as slurmctld does, the node is drained and the job requeued held,
    instead of failing every job sent there or looping through NODE_FAIL."""
    live.reset()
    job = live.sbatch("-w", "gpu02", "--wrap", "true")
    held = until(lambda: (j := live.job(job))["restart_count"] == 1 and j["state"] == "PENDING" and j, 15,
                 "the requeue")
    assert held["reason"] == "JobHeldAdmin"
    node = live.node("gpu02")
    assert (node["state"], node["reason"]) == ("drain", "batch job complete failure")
    runs = [r["state"] for r in live.acct(job, duplicates=True) if r["step"] is None]
    assert runs == ["REQUEUED", "PENDING"], runs
    assert live.run("scancel", str(job)).returncode == 0
    assert live.run("scontrol", "update", "NodeName=gpu02", "State=RESUME").returncode == 0
