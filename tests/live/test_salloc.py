"""salloc against a live cluster: Slurm 22.05's messages (checked on the real-Slurm twin,
/work notes "g"), the command run on the login host with the allocation's variables, srun
steps inside it, the command's exit status, and the allocation given back."""

from __future__ import annotations

import re
import subprocess

import pytest

pytestmark = pytest.mark.live


def salloc(live, *argv: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([str(live.c.dir / "bin" / "salloc"), *argv], env=live.c.env(), cwd=live.work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_salloc_runs_the_command_with_the_allocation_and_gives_it_back(live):
    proc = salloc(live, "-N2", "-n2", "bash", "-c",
                  'echo "$SLURM_JOB_NODELIST $SLURM_NNODES $SLURM_NTASKS"; srun hostname | wc -l; exit 3')
    out, err = proc.communicate(timeout=60)
    m = re.fullmatch(r"salloc: Granted job allocation (\d+)\nsalloc: Relinquishing job allocation \1\n", err)
    assert m, err
    assert (proc.returncode, out) == (3, "gpu[01-02] 2 2\n2\n")  # salloc exits with the command's status
    job = live.wait(int(m.group(1)))
    assert job["state"] == "FAILED" and job["exit_code"].startswith("3:")


def test_salloc_waits_with_slurms_messages(live):
    blocker = live.sbatch("-N2", "--gres=gpu:4", "--wrap", "sleep 60")
    live.wait(blocker, "RUNNING")
    proc = salloc(live, "--gres=gpu:1", "true")
    lines = [proc.stderr.readline() for _ in range(2)]
    m = re.fullmatch(r"salloc: Pending job allocation (\d+)\n", lines[0])
    assert m and lines[1] == f"salloc: job {m.group(1)} queued and waiting for resources\n", lines
    assert live.run("scancel", str(blocker)).returncode == 0
    out, err = proc.communicate(timeout=30)
    job_id = m.group(1)
    assert err == (f"salloc: job {job_id} has been allocated resources\nsalloc: Granted job allocation {job_id}\n"
                   f"salloc: Relinquishing job allocation {job_id}\n")
    assert proc.returncode == 0


def test_salloc_refusals(live):
    r = live.run("salloc", "-N", "0", "true")
    assert (r.returncode, r.stderr) == (1, "salloc: error: Job submit/allocate failed: "
                                           "Node count specification invalid\n")
    r = live.run("salloc", "--gres=gpu:9", "true")
    assert r.returncode == 1
    assert r.stderr.startswith("salloc: error: Job submit/allocate failed: "
                               "Requested node configuration is not available\n"), r.stderr
