"""jobstats on a live cluster: a job of 2 nodes x 2 tasks, each task burning a known amount of
CPU and holding a known amount of memory; the report's per-task and per-node figures are those
amounts, on the nodes where the tasks say they ran (issue 26, item 5)."""

from __future__ import annotations

import json

import pytest

from livekit import until

pytestmark = pytest.mark.live

MIB = 1024  # KiB
# Task i holds 40 x (i + 1) MiB and burns 0.5 x (i + 1) s of CPU, then says where it ran.
BURN = """\
import os, time
i = int(os.environ["SLURM_PROCID"])
x = bytearray((40 * (i + 1)) << 20)
t = time.process_time()
while time.process_time() - t < 0.5 * (i + 1):
    pass
print(i, os.environ["SLURMD_NODENAME"], flush=True)
"""


def want_cpu(i: int) -> float:
    return 0.5 * (i + 1)


def want_rss(i: int) -> int:
    return 40 * (i + 1) * MIB


def test_jobstats_reports_each_task_and_node_as_they_burned(live):
    (live.work / "burn.py").write_text(BURN)
    job = live.sbatch("-J", "burn", "-N2", "--ntasks-per-node=2", "--mem=1000M", "--gres=gpu:1", "-t", "5",
                      "-o", "burn.out", "--wrap", "srun python3 burn.py")
    assert live.wait(job, timeout=120)["state"] == "COMPLETED"
    ran_on = {int(i): node for i, node in (line.split() for line in (live.work / "burn.out").read_text().splitlines())}
    assert sorted(ran_on) == [0, 1, 2, 3] and len(set(ran_on.values())) == 2, ran_on
    r = live.run("jobstats", str(job), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)

    tasks = {t["task"]: t for t in report["per_task"] if t["step"] == "0"}
    assert sorted(tasks) == [0, 1, 2, 3]
    for i, t in tasks.items():
        assert t["node"] == ran_on[i] and t["cpus"] == 1
        # CPU: what it burned, plus Python's start, less at most one sample (0.1 s) missed
        assert want_cpu(i) - 0.15 <= t["cpu"] <= want_cpu(i) + 0.4, t
        assert want_rss(i) <= t["rss"] <= want_rss(i) + 40 * MIB, t  # its buffer, and Python itself
        assert t["cores_used"] == pytest.approx(t["cpu"] / t["elapsed"], rel=1e-3)

    batch_node = next(t["node"] for t in report["per_task"] if t["step"] == "batch")
    nodes = {n["node"]: n for n in report["per_node"]}
    assert set(nodes) == set(ran_on.values())
    for name, n in nodes.items():
        mine = [t for t in tasks.values() if t["node"] == name]
        assert len(mine) == 2 and n["cpus"] == 2 and n["mem_req"] == 1000 * MIB
        burned = sum(t["cpu"] for t in mine)
        if name == batch_node:  # the batch script (the shell and srun) ran there too
            assert burned <= n["cpu"] <= burned + 3.0, n
        else:
            assert n["cpu"] == pytest.approx(burned, abs=0.01), n
        # the node's peak is one moment's: at least its largest task's, at most both at once
        assert max(t["rss"] for t in mine) <= n["rss"] <= sum(t["rss"] for t in mine), n
        assert n["cores_used"] == pytest.approx(n["cpu"] / report["elapsed"], rel=1e-3)
        (gpu,) = n["gpus"]
        # a GPU is measured only where it is real; else the report says why not (never a number)
        assert ("util" in gpu) != bool(n["gpu_note"]), n
    assert report["total_cpu"] == pytest.approx(sum(n["cpu"] for n in nodes.values()), abs=0.01)
    assert report["time_limit"] == 300 and 0 < report["elapsed"] < 300

    text = live.run("jobstats", str(job)).stdout
    assert text.startswith(f"Job {job} (burn): COMPLETED, exit code 0\n")
    for i, t in tasks.items():
        assert f"  {f'{job}.0 task {i}':<16} {t['node']} " in text
    for name, n in nodes.items():
        if n["gpu_note"]:
            assert f"  {name} GPU {n['gpus'][0]['index']}" in text and f"not measured: {n['gpu_note']}" in text
    assert "Right-sizing" in text and "--time=" in text  # seconds of a 5-minute limit


def test_jobstats_of_a_running_job_asks_its_nodes(live):
    job = live.sbatch("-J", "spin", "-N2", "--ntasks-per-node=1", "-t", "5", "-o", "/dev/null", "--wrap",
                      "srun python3 -c 'x = bytearray(30 << 20)\nwhile True: pass'")
    live.wait(job, "RUNNING")

    def burned_a_second() -> dict | None:
        r = live.run("jobstats", "--json", str(job))
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        busy = [t for t in report["per_task"] if t["step"] == "0" and t["cpu"] > 1.0]
        return report if len(busy) == 2 else None

    now = until(burned_a_second, timeout=60, what="both tasks to burn a second, as their nodes say")
    assert now["state"] == "RUNNING" and now["advice"] == []
    assert {t["node"] for t in now["per_task"] if t["step"] == "0"} == {n["node"] for n in now["per_node"]}
    assert all(t["rss"] >= 30 * MIB for t in now["per_task"] if t["step"] == "0")
    assert "It is still running: these are the figures so far." in live.run("jobstats", str(job)).stdout
    live.run("scancel", str(job))
    live.wait(job)
