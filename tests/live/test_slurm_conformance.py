"""What a learner types on a real cluster, answered as Slurm 22.05 answers it (issue 12).

The cluster is built from the twin's own ``docker/slurm/slurm.conf`` (nodes c1 and c2, partition
gpu), so each expected text below is what the real-Slurm twin printed for the same command
(recorded in /work/wt/notes/twin-facts.md, section g; job ids replaced by ``{a}``, ``{b}``...).
tests/docker/test_real_slurm.py runs the same cases against the twin itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.live
CONF = Path(__file__).resolve().parents[2] / "docker" / "slurm" / "slurm.conf"
CLUSTER = {"conf": CONF}


@pytest.fixture(autouse=True)
def clean(live):
    live.reset()


def test_array_task_selectors_name_one_task(live):
    a = live.sbatch("-a", "1-4", "--wrap", "sleep 30")
    for t in range(1, 5):
        live.wait(a + t - 1, "RUNNING")
    r = live.run("squeue", "-h", "-o", "%i %j %T", "-j", f"{a}_2")
    assert (r.returncode, r.stdout) == (0, f"{a}_2 wrap RUNNING\n")
    r = live.run("squeue", "-h", "-r", "-o", "%i", "-j", f"{a}_2,{a}_3")
    assert sorted(r.stdout.split()) == [f"{a}_2", f"{a}_3"]
    r = live.run("squeue", "-j", f"{a}_9")  # no such task of a known array: nothing, exit 0
    assert (r.returncode, r.stdout.count("\n")) == (0, 1)
    live.run("scancel", str(a))
    b = live.sbatch("-a", "1-3", "--wrap", "true")
    for t in range(3):
        live.wait(b + t)
    r = live.run("sacct", "-j", f"{b}_3", "-P", "-o", "JobID,JobName,State")
    assert r.stdout == f"JobID|JobName|State\n{b}_3|wrap|COMPLETED\n{b}_3.batch|batch|COMPLETED\n"


def test_sacct_state_codes_and_relative_start_times(live):
    b = live.sbatch("--wrap", "true")
    live.wait(b)
    for codes in ("CD", "cd", "COMPLETED", "F,CD"):
        r = live.run("sacct", "-X", "-P", "-o", "JobID,State", "-s", codes, "-j", str(b))
        assert r.stdout == f"JobID|State\n{b}|COMPLETED\n", codes
    r = live.run("sacct", "-X", "-P", "-o", "JobID,State", "-s", "F", "-j", str(b))
    assert (r.returncode, r.stdout) == (0, "JobID|State\n")
    r = live.run("sacct", "-X", "-P", "-s", "bogus")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "sacct: fatal: unrecognized job state value 'bogus'\n")
    for since in ("now-5minutes", "now-1hour", "now-1days", "now-300"):
        r = live.run("sacct", "-X", "-n", "-P", "-o", "JobID", "-S", since)
        assert r.returncode == 0 and str(b) in r.stdout.split(), (since, r.stderr)
    r = live.run("sacct", "-X", "-S", "bogus")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "Invalid time specification (pos=0): bogus\n")
