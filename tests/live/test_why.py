"""minislurm why: what it says from the scheduler's plan is what then happens on the cluster."""

from __future__ import annotations

import json
import subprocess
import time


def why(live, job_id: int) -> dict:
    r = subprocess.run(["minislurm", "why", str(job_id), "--json"], env=live.c.env(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def planned(live, job_id: int, within: float = 30.0) -> dict:
    """why, once a backfill cycle has planned the job."""
    deadline = time.time() + within
    while True:
        w = why(live, job_id)
        if w["expected_start"] is not None or time.time() > deadline:
            return w
        time.sleep(0.2)


def test_why_names_what_holds_a_job_and_a_what_if_that_then_comes_true(live):
    a = live.sbatch("-J", "long", "-N1", "--gres=gpu:4", "-t", "10", "-o", "/dev/null", "--wrap", "sleep 600")
    live.wait(a, "RUNNING")
    b = live.sbatch("-J", "wide", "-N2", "--gres=gpu:4", "-t", "30", "-o", "/dev/null", "--wrap", "true")
    c = live.sbatch("-J", "next", "-N1", "--gres=gpu:4", "-t", "60", "-o", "/dev/null", "--wrap", "sleep 600")
    wide = planned(live, b)
    assert wide["state"] == "PENDING" and wide["reason"] == "Resources" and "in use" in wide["meaning"]
    assert len(wide["planned_nodes"]) == 2
    (holder,) = wide["held_by"]
    assert holder["job_id"] == a and holder["name"] == "long" and len(holder["nodes"]) == 1
    assert abs(wide["expected_start"] - holder["ends_by"]) <= 5  # the plan's grid (bf_resolution)
    nxt = planned(live, c)
    assert nxt["reason"] in ("Priority", "Resources") and [x["job_id"] for x in nxt["ahead"]] == [b]
    shorter = [t for t in nxt["what_if"] if t["option"].startswith("--time=")]
    assert shorter and shorter[0]["start"] <= nxt["now"], nxt
    (free,) = shorter[0]["nodes"]
    assert free != holder["nodes"][0]
    # Do what it says: the job starts at once, where it said.
    minutes = shorter[0]["option"].split("=")[1]
    assert live.run("scontrol", "update", f"JobId={c}", f"TimeLimit={minutes}").returncode == 0
    started = live.wait(c, "RUNNING", timeout=15)
    assert started["nodes"] == free, (started, free)
    text = subprocess.run(["minislurm", "why", str(b)], env=live.c.env(), capture_output=True, text=True).stdout
    assert text.startswith(f"Job {b} (wide) is PENDING, reason Resources") and f"job {a} (long" in text
    # scontrol show job -d: Slurm's lines as -o prints them (one line, no section), then minislurm's section
    shown = live.run("scontrol", "show", "job", "-d", str(b)).stdout
    slurm, mark, ours = shown.partition("\n   minislurm (not in Slurm's scontrol): why it waits, as "
                                        f"'minislurm why {b}' says:\n")
    assert mark and ours.endswith("\n\n"), shown
    one = live.run("scontrol", "show", "job", "-d", "-o", str(b)).stdout
    assert "minislurm" not in one and one == slurm.replace("\n   ", " ") + "\n"
    said = [line.removeprefix("     ") for line in ours.rstrip("\n").splitlines()]
    assert said[0] == text.splitlines()[0] and f"job {a} (long" in ours  # the same words as minislurm why
    assert "minislurm" not in live.run("scontrol", "show", "job", "-d", str(a)).stdout  # running: Slurm's alone
    live.run("scancel", str(a), str(b), str(c))
