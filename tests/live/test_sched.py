"""Dependencies, array throttles and expected start times on a live cluster (reference 1.2
``-d``/``-a``, 3.3 and 3.4)."""

from __future__ import annotations

import re
import time

import pytest

from livekit import until

pytestmark = pytest.mark.live


def test_afterok_chain_runs_in_order(live):
    go = live.work / "chain-go"
    a = live.sbatch("--wrap", f"until [ -e {go} ]; do sleep 0.1; done")  # runs until the checks are done
    b = live.sbatch(f"--dependency=afterok:{a}", "--wrap", "sleep 0.5")
    c = live.sbatch("-d", f"afterok:{b}", "--wrap", "true")
    live.wait(a, "RUNNING")
    assert (live.job(b)["state"], live.job(b)["reason"]) == ("PENDING", "Dependency")
    assert f"Dependency=afterok:{a}(unfulfilled)\n" in live.run("scontrol", "show", "job", str(b)).stdout
    assert live.run("squeue", "-h", "-o", "%E", "-j", str(c)).stdout == f"afterok:{b}(unfulfilled)\n"
    go.touch()
    jobs = [live.wait(j) for j in (a, b, c)]
    assert [j["state"] for j in jobs] == ["COMPLETED"] * 3
    assert jobs[0]["end_time"] <= jobs[1]["start_time"] and jobs[1]["end_time"] <= jobs[2]["start_time"]


def test_afternotok_and_a_dependency_that_can_never_be_satisfied(live):
    a = live.sbatch("--wrap", "exit 1")
    on_failure = live.sbatch(f"--dependency=afternotok:{a}", "--wrap", "true")
    on_success = live.sbatch(f"--dependency=afterok:{a}", "--wrap", "true")
    assert live.wait(a)["state"] == "FAILED"
    assert live.wait(on_failure)["state"] == "COMPLETED"
    until(lambda: live.job(on_success)["reason"] == "DependencyNeverSatisfied", 10, "the dependency to fail")
    assert live.job(on_success)["state"] == "PENDING"
    r = live.run("squeue", "-j", str(on_success), "-h", "-o", "%i %t %r %E")
    assert r.stdout == f"{on_success} PD DependencyNeverSatisfied afterok:{a}(failed)\n"
    assert live.run("scancel", str(on_success)).returncode == 0


def test_a_dependency_on_an_unknown_job_is_dropped(live):
    """Slurm 22.05 accepts ``afterok:`` an id it does not know and drops that item (seen on the
    twin; minislurm refused it with 'Job dependency problem' before)."""
    job = live.sbatch("--dependency=afterok:999999", "--wrap", "true")
    assert live.wait(job)["state"] == "COMPLETED"


def test_singleton_waits_for_the_same_name(live):
    first = live.sbatch("-J", "solo", "--wrap", "sleep 3")
    live.wait(first, "RUNNING")
    second = live.sbatch("-J", "solo", "--dependency=singleton", "--wrap", "true")
    other = live.sbatch("-J", "not-solo", "--dependency=singleton", "--wrap", "true")
    until(lambda: live.job(second)["reason"] == "Dependency", 5, "the pass to look at the singleton")
    assert live.wait(other)["state"] == "COMPLETED"
    assert live.job(first)["state"] == "RUNNING"  # the singleton of another name did not wait
    done = [live.wait(j) for j in (first, second)]
    assert done[1]["state"] == "COMPLETED" and done[0]["end_time"] <= done[1]["start_time"]


def test_array_throttle_never_runs_two_tasks(live):
    r = live.run("sbatch", "--array=0-2%1", "-J", "thr", "--wrap", "sleep 1")
    master = int(re.fullmatch(r"Submitted batch job (\d+)\n", r.stdout).group(1))
    until(lambda: any(j["state"] == "RUNNING" for j in live.api.call("GET", "/jobs", query={"ids": master})["jobs"]),
          10, "the first task")
    lines = live.run("squeue", "-h", "-o", "%i %t %r", "-j", str(master)).stdout.splitlines()
    assert lines == [f"{master}_[1-2%1] PD JobArrayTaskLimit", f"{master}_0 R None"]
    seen = []
    deadline = time.time() + 30
    while time.time() < deadline:
        jobs = live.api.call("GET", "/jobs", query={"ids": master})["jobs"]
        seen.append(sum(j["state"] == "RUNNING" for j in jobs))
        if all(j["state"] == "COMPLETED" for j in jobs):
            break
        time.sleep(0.02)
    assert max(seen) == 1
    tasks = sorted(live.api.call("GET", "/jobs", query={"ids": master})["jobs"], key=lambda j: j["array_task_id"])
    assert [t["state"] for t in tasks] == ["COMPLETED"] * 3
    for a, b in zip(tasks, tasks[1:]):
        assert a["end_time"] <= b["start_time"]


def test_squeue_start_shows_the_expected_start_of_a_blocked_job(live):
    """Reference scenario: A holds the 4 GPUs of one node; B needs both nodes' GPUs, so B can
    start when A's time limit is up."""
    live.reset()
    a = live.sbatch("-J", "A", "--gres=gpu:4", "-t", "5", "--wrap", "sleep 300")
    a_job = live.wait(a, "RUNNING")
    b = live.sbatch("-J", "B", "-N2", "--gres=gpu:4", "-t", "5", "--wrap", "true")
    until(lambda: live.job(b)["expected_start"], 10, "the backfill pass to plan B")
    b_job = live.job(b)
    assert (b_job["state"], b_job["reason"]) == ("PENDING", "Resources")
    # A's end by its limit, rounded up to the plan's resolution (bf_resolution, 5 s here)
    assert a_job["start_time"] + 300 <= b_job["expected_start"] <= a_job["start_time"] + 305
    r = live.run("squeue", "--start")
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(b_job["expected_start"]))
    assert r.stdout == (
        "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES SCHEDNODES           "
        "NODELIST(REASON)\n"
        f"{b:>18}       gpu        B     root PD {start}      2 gpu[01-02]           (Resources)\n")
    for job_id in (a, b):
        live.run("scancel", str(job_id))
