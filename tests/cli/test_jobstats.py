"""jobstats' report, offline: the figures per node, per task and per GPU from accounting rows,
the words it prints, and the right-sizing advice (issue 26, item 5)."""

from __future__ import annotations

import json

import pytest

from minislurm.cli import jobstats
from minislurm.cli.fmt.jobstats import advice, collect, render

MIB = 1024  # KiB


def task(cpu: float, rss_mib: int) -> dict:
    return {"cpu": cpu, "rss": rss_mib * MIB}


def node(tasks: dict[int, dict], **extra) -> dict:
    return {"cpu": sum(t["cpu"] for t in tasks.values()), "rss": sum(t["rss"] for t in tasks.values()),
            "ntasks": len(tasks), "tasks": {str(k): v for k, v in tasks.items()}, **extra}


def rows(*, state="COMPLETED", gpus=(), batch_extra=None, step_extra=None, mem=1000, limit=600.0,
         cpt=1) -> list[dict]:
    """A job of 2 nodes x 2 tasks of ``cpt`` CPUs that ran 100 s: step 0 burned 50 s of CPU per
    task on gpu01 and 25 s on gpu02; the batch script used 1 s on gpu01."""
    alloc = [{"node": n, "cpus": 2 * cpt, "mem": mem, "gpus": list(gpus)} for n in ("gpu01", "gpu02")]
    job = {"job_id": 12, "step": None, "name": "burn", "user": "ann", "account": "lab", "partition": "gpu",
           "state": state, "exit_code": 0, "nodes": "gpu[01-02]", "start": 1000.0,
           "end": None if state == "RUNNING" else 1100.0, "time_limit": limit, "alloc_cpus": 4 * cpt,
           "alloc_nodes": alloc}
    batch = {"job_id": 12, "step": "batch", "start": 1000.0, "end": job["end"], "alloc_cpus": 2 * cpt, "ntasks": 1,
             "node_usage": {"gpu01": node({0: task(1.0, 40)}, **(batch_extra or {}))}}
    step = {"job_id": 12, "step": "0", "start": 1000.0, "end": job["end"] and 1090.0, "alloc_cpus": 4 * cpt,
            "ntasks": 4,
            "node_usage": {"gpu01": node({0: task(50.0, 300), 1: task(50.0, 310)}, **(step_extra or {})),
                           "gpu02": node({2: task(25.0, 200), 3: task(25.0, 100)}, **(step_extra or {}))}}
    return [job, batch, step]


def test_per_node_figures_add_the_steps_cpu_and_take_the_largest_peak():
    r = collect(rows(), now=2000.0)
    one, two = r["per_node"]
    assert (one["node"], one["cpu"], one["cores_used"]) == ("gpu01", 101.0, pytest.approx(1.01))
    assert one["rss"] == 610 * MIB and one["mem_req"] == 1000 * MIB  # step 0's peak, not added to the batch's
    assert (two["cpu"], two["rss"], two["mem_used"]) == (50.0, 300 * MIB, pytest.approx(0.3))
    assert r["total_cpu"] == 151.0 and r["cores_used"] == pytest.approx(1.51) and r["time_used"] == pytest.approx(1 / 6)


def test_per_task_figures_are_over_their_steps_wall_time_and_their_share_of_cores():
    given = rows()
    given[2]["node_usage"] = dict(reversed(given[2]["node_usage"].items()))  # as the nodes answered
    r = collect(given, now=2000.0)
    tasks = {(t["step"], t["task"]): t for t in r["per_task"]}
    assert list(tasks) == [("batch", 0), ("0", 0), ("0", 1), ("0", 2), ("0", 3)]
    t = tasks[("0", 2)]
    assert (t["node"], t["cpus"], t["elapsed"], t["rss"]) == ("gpu02", 1.0, 90.0, 200 * MIB)
    assert t["cores_used"] == pytest.approx(25 / 90)
    assert tasks[("batch", 0)]["cpus"] == 2  # the batch script holds the first node's cores


def test_the_text_names_every_node_task_and_figure():
    text = render(collect(rows(), now=2000.0))
    assert text.startswith("Job 12 (burn): COMPLETED, exit code 0\n")
    assert "  Wall time: 00:01:40 of a 00:10:00 limit (16.7%)\n" in text
    assert "  CPU cores used: 1.51 of 4 (37.8%)\n" in text
    lines = text.splitlines()
    assert "  gpu01                         1.01 of 2 (50.5%)             610.00 MB of 1000.00 MB (61.0%)" in lines
    assert "  12.0 task 3      gpu02        0.28 of 1 (27.8%)             100.00 MB" in lines
    assert "Per GPU" not in text  # it has none


def test_fake_gpus_say_not_measured_and_real_ones_give_their_figures():
    fake = collect(rows(gpus=(0, 1), step_extra={"gpu_note": "no real GPU"}), now=2000.0)
    assert fake["per_node"][1]["gpu_note"] == "no real GPU" and fake["per_node"][1]["gpus"] == [{"index": 0},
                                                                                              {"index": 1}]
    assert "  gpu02 GPU 1                   not measured: no real GPU" in render(fake).splitlines()
    measured = {"0": {"util": 93.5, "mem": 30 * MIB * 1024, "total": 80 * MIB * 1024, "samples": 90}}
    # the batch step spans the job on gpu01: its figures win there; on gpu02 step 0's
    real = collect(rows(gpus=(0,), batch_extra={"gpus": measured},
                        step_extra={"gpus": {"0": dict(measured["0"], util=20.0)}}), now=2000.0)
    one, two = real["per_node"]
    assert one["gpus"] == [{"index": 0, **measured["0"]}] and one["gpu_note"] is None
    assert two["gpus"][0]["util"] == 20.0
    lines = render(real).splitlines()
    assert "  gpu01 GPU 0                   93.5%                         30.00 GB of 80.00 GB" in lines
    assert any(a.startswith("GPU: GPU 0 on gpu02 was busy 20%") for a in real["advice"])


def test_a_gpu_no_step_touched_is_said_so():
    r = rows(gpus=(0,))
    r[2]["node_usage"].pop("gpu02")
    assert collect(r, now=2000.0)["per_node"][1]["gpu_note"] == "no step ran here"


def test_advice_sizes_cpu_memory_and_time_from_the_figures():
    r = collect(rows(mem=4000, limit=3600.0, cpt=2), now=2000.0)
    said = "\n".join(r["advice"])
    # per task: the busiest kept 50 s / 90 s of its 2 cores busy; ceil(0.56 x 1.25) is 1
    assert "CPU: it kept 1.51 of its 8 cores busy on average, its busiest task 0.56 of 2: --cpus-per-task=1" in said
    assert "--mem=763M" in said  # 610 MiB x 1.25, rounded up
    assert "--time=3 " in said  # 100 s x 1.25 is 2 min 5 s: three whole minutes
    snug = collect(rows(mem=700, limit=120.0), now=2000.0)  # one core a task: none to give back
    assert snug["advice"] == ["What it asked for fits what it used."]
    none = collect(rows(mem=0), now=2000.0)
    assert any("it asked for none" in a and "--mem=763M" in a for a in none["advice"])
    assert "no memory requested" in render(none)


def test_advice_when_everything_fits():
    r = {"cpus": 1, "cores_used": 0.9, "per_task": [],
         "per_node": [{"node": "n1", "rss": 900, "mem_req": 1000, "gpus": []}],
         "time_limit": 100.0, "elapsed": 90.0}
    assert advice(r) == ["What it asked for fits what it used."]


def test_a_running_job_uses_the_live_figures_and_gives_no_advice():
    r = rows(state="RUNNING")
    for s in r[1:]:
        live_nodes = s.pop("node_usage")
        s["end"] = None
    live = {"0": live_nodes}
    report = collect(r, now=1050.0, live=live)
    assert report["elapsed"] == 50.0 and report["advice"] == []
    assert report["per_node"][1]["cpu"] == 50.0  # step 0 so far on gpu02
    assert "It is still running: these are the figures so far." in render(report)


def test_a_pending_job_has_nothing_to_report():
    r = rows(state="PENDING")
    r[0].update(start=None, end=None, alloc_nodes=[])
    text = render(collect(r[:1], now=1050.0))
    assert text.endswith("  It has not run yet: nothing to report.\n")


def test_json_prints_the_same_report(monkeypatch, capsys):
    report = collect(rows(), now=2000.0)
    monkeypatch.setattr(jobstats, "fetch", lambda client, job_id: report if job_id == "12" else None)
    monkeypatch.setattr(jobstats, "Client", lambda: None)
    assert jobstats.main(["12", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(report))
    assert jobstats.main(["13"]) == 1 and "job 13 not found" in capsys.readouterr().err
    assert jobstats.main(["1x"]) == 1 and "Invalid job id 1x" in capsys.readouterr().err


class Accounting:
    """The controller's /acct for ``fetch``: these records, whatever the query."""

    def __init__(self, records: list[dict]):
        self.records = records

    def call(self, method: str, path: str, query=None) -> dict:
        assert (method, path) == ("GET", "/acct")
        return {"records": self.records}


def test_an_array_task_is_named_as_sacct_names_it_and_a_whole_array_is_refused():
    def task(job_id, index):
        return [dict(r, job_id=job_id, display_id=f"20_{index}") for r in rows()]
    client = Accounting(task(20, 1) + task(21, 2))
    assert jobstats.fetch(client, "20_2")["job_id"] == 21 and jobstats.fetch(client, "21")["job_id"] == 21
    pending = Accounting([dict(rows(state="PENDING")[0], job_id=20, display_id=f"20_{i}") for i in (1, 2)])
    with pytest.raises(ValueError, match=r"job 20 is an array: name one of its tasks \(20_1\)"):
        jobstats.fetch(pending, "20")
    assert jobstats.fetch(client, "20_7") is None
