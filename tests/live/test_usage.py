"""What jobs use: slurmd samples each step's processes; sacct shows TotalCPU and MaxRSS, seff the
efficiency of a finished job, sstat a running step's usage so far."""

from __future__ import annotations

import re
import time

import pytest

from livekit import until

pytestmark = pytest.mark.live

BURN = ("python3 -c 'import time\nt = time.process_time()\nx = bytearray(64 << 20)\n"
        "while time.process_time() - t < 1.5: pass'")


def test_sacct_and_seff_report_cpu_and_memory_of_a_finished_job(live):
    # The sleep keeps Elapsed x 2 cores above the CPU used: elapsed time is whole seconds (as in
    # Slurm), so a job of 1.5 s could show 1 s and an efficiency over 100 % (seen: 154 %).
    job = live.sbatch("-n2", "--mem=1G", "--wrap", f"srun -n2 {BURN}; sleep 3")
    assert live.wait(job, timeout=60)["state"] == "COMPLETED"
    r = live.run("sacct", "-j", str(job), "-P", "-o", "JobID,TotalCPU,MaxRSS")
    rows = {line.split("|")[0]: line.split("|")[1:] for line in r.stdout.splitlines()[1:]}
    def seconds(text):  # MM:SS.mmm
        m, s = text.split(":")
        return int(m) * 60 + float(s)
    step_cpu = seconds(rows[f"{job}.0"][0])
    assert 2.0 <= step_cpu <= 4.0, rows  # two tasks x 1.5 s of CPU, less at most one sample each
    assert int(rows[f"{job}.0"][1].rstrip("K")) >= 2 * 60 * 1024  # both 64 MiB buffers at once
    assert rows[str(job)][1] == "" and seconds(rows[str(job)][0]) >= step_cpu  # the job line adds steps up
    out = live.run("seff", str(job)).stdout
    assert f"Job ID: {job}\n" in out and "State: COMPLETED (exit code 0)" in out and "Nodes: 1\nCores per node: 2\n" in out
    assert re.search(r"CPU Utilized: 00:00:0[234]\n", out), out  # the job line's TotalCPU
    eff = float(re.search(r"CPU Efficiency: ([\d.]+)%", out).group(1))
    assert 0 < eff <= 100, out  # over Elapsed x 2 cores: how far below 100 depends on the machine's load
    assert re.search(r"Memory Efficiency: [\d.]+% of 1.00 GB", out), out


def test_sstat_shows_a_running_step(live):
    job = live.sbatch("--wrap", "srun python3 -c 'x = bytearray(32 << 20)\nwhile True: pass'")
    live.wait(job, "RUNNING")
    until(lambda: f"{job}.0" in live.run("sstat", "-j", str(job), "-P", "-n").stdout, timeout=20)
    time.sleep(1.0)
    r = live.run("sstat", "-j", str(job), "-a", "-P", "-o", "JobID,NTasks,TotalCPU,MaxRSS,MaxRSSNode")
    rows = {line.split("|")[0]: line.split("|") for line in r.stdout.splitlines()[1:]}
    assert set(rows) == {f"{job}.batch", f"{job}.0"}, r.stdout
    step = rows[f"{job}.0"]
    assert step[1] == "1" and step[4] == "gpu01" and int(step[3].rstrip("K")) >= 30 * 1024
    assert float(step[2].split(":")[1]) > 0.3
    assert live.run("scancel", str(job)).returncode == 0
    live.wait(job)
    r = live.run("sstat", "-j", str(job))
    assert r.returncode == 1 and "Job/step already completing or completed" in r.stderr
