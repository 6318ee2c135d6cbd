"""Why a job waits, in the labs (issue 26, item 1): at a moment of a scenario, every statement
is checked against what the scenario then does; on a live cluster, the controller's answer."""

from __future__ import annotations

from dataclasses import replace

import pytest

from minislurm.lab import WhyWaiting, why_waiting
from minislurm.lab.backfill_view import AFTERNOON
from minislurm.lab.scenario import run_scenario
from minislurm.lab.terminal import lab_cluster
from minislurm.lab.whywait import why_at, words

MIN = 60
FULL = [replace(j, runtime=None) for j in AFTERNOON]  # every job runs to its time limit: the plan is exact


def nodes_of(run, result) -> list[str]:
    return [result.node_names[n] for n in run.nodes]


def test_what_holds_a_waiting_job_is_what_then_happens():
    at = 45 * MIN
    w = why_at(FULL, "eval-long", at)
    done = run_scenario(FULL)
    assert w["state"] == "PENDING" and w["name"] == "eval-long" and w["reason"] == "Priority"
    started = done.runs["eval-long"]
    assert (w["expected_start"], w["planned_nodes"]) == (started.start, nodes_of(started, done))
    for held in w["held_by"]:  # running there at that moment, until its time limit
        run = done.runs[held["name"]]
        assert run.start <= at < run.end == held["ends_by"] and set(held["nodes"]) <= set(nodes_of(run, done))
    (ahead,) = w["ahead"]
    assert ahead["name"] == "pretrain" and ahead["expected_start"] == done.runs["pretrain"].start


def test_the_what_if_comes_true_and_a_minute_more_would_not_start_it():
    at = 45 * MIN
    w = why_at(AFTERNOON, "eval-long", at)
    (shorter,) = [t for t in w["what_if"] if t["option"].startswith("--time=")]
    assert shorter["start"] == at and shorter["nodes"] == ["node02"]
    limit = int(shorter["option"].split("=")[1]) * MIN
    asked = [replace(j, limit=limit, runtime=min(j.work, limit)) if j.name == "eval-long" else j for j in AFTERNOON]
    done = run_scenario(asked)
    assert done.start("eval-long") <= at and nodes_of(done.runs["eval-long"], done) == ["node02"]
    # the plan's start is a bound: jobs that end early let it start sooner, never later
    assert run_scenario(AFTERNOON).start("eval-long") <= w["expected_start"]


def test_a_job_not_yet_waiting_or_already_running():
    with pytest.raises(ValueError, match="eval-long is not submitted yet at 0:05 \\(it is at 0:15\\)"):
        why_at(AFTERNOON, "eval-long", 5 * MIN)
    w = why_at(AFTERNOON, "eval", 11 * MIN)
    assert words(w, scenario=True) == "Job 4 (eval) is RUNNING: it is not waiting.\n"


def test_the_scenario_widget_explains_the_moment_chosen():
    view = why_waiting(job="eval-long", at=45 * MIN)
    assert isinstance(view, WhyWaiting)
    text = view.table.value
    assert "Job 5 (eval-long) is PENDING, reason Priority" in text and "The scheduler&#x27;s plan starts it at" in text
    assert "What then happened: it started at" in text and "--time=134" in text
    asked = [line for line in view.fig.axes[0].lines if line.get_gid() == "asked"]
    assert asked and asked[0].get_xdata()[0] == 0.75  # hours: the afternoon runs past six
    view.minute.value = 20  # the sweep and eval fill node02: no change of limit starts it now
    assert "No shorter time limit or other partition starts it sooner." in view.table.value
    view.job.value = "finetune"
    assert "is RUNNING: it is not waiting" in view.table.value
    view.minute.value = 0
    view.job.value = "eval-long"
    assert view.error == "eval-long is not submitted yet at 0:00 (it is at 0:15)"


def test_the_live_widget_asks_the_controller():
    with lab_cluster(nodes=1, gpus_per_node=1) as sh:
        busy = sh.submit("sbatch -J busy --gres=gpu:1 -t 10 --wrap 'sleep 600'", show=False)
        sh.wait(busy, state="RUNNING")
        waits = sh.submit("sbatch -J waits --gres=gpu:1 -t 60 --wrap true", show=False)
        sh.until(lambda: sh.api.call("GET", f"/jobs/{waits}/why")["expected_start"], what="a plan for it")
        view = why_waiting(sh, waits)
        assert f"Job {waits} (waits) is PENDING, reason Resources" in view.table.value
        assert f"job {busy} (busy," in view.table.value and view.fig is None
        sh(f"scancel {busy}", show=False)
        sh.wait(waits, state=("RUNNING", "COMPLETED"))
        view.again.click()
        assert "it is not waiting" in view.table.value
