"""minislurm why's words, offline, and the same as scontrol show job -d's section (issue 26, item 1)."""

from __future__ import annotations

from minislurm.cli.why import describe, section

W = {"job_id": 7, "name": "wide", "state": "PENDING", "reason": "Resources", "meaning": "what it asks for is in use",
     "priority": 10, "expected_start": 3600.0, "planned_nodes": ["gpu01", "gpu02"], "now": 600.0,
     "held_by": [{"job_id": 5, "name": "long", "user": "ann", "nodes": ["gpu01"], "ends_by": 3600.0}],
     "ahead": [], "what_if": [{"option": "--time=20", "start": 600.0, "nodes": ["gpu02"]},
                             {"option": "--partition=big", "start": 1200.0, "nodes": ["big01"]}]}


def test_describe_writes_times_as_it_is_told():
    text = describe(W, when=lambda t: f"t={t:g}")
    assert text.splitlines() == [
        "Job 7 (wide) is PENDING, reason Resources: what it asks for is in use.",
        "The scheduler's plan starts it at t=3600 on gpu01,gpu02.",
        "Running there first (each ends by its time limit at the latest):",
        "  job 5 (long, ann) on gpu01 until t=3600",
        "With --time=20 it would start now on gpu02.",
        "With --partition=big it would start at t=1200 on big01."]


def test_scontrols_section_is_marked_as_minislurms_and_says_the_same():
    lines = section(W)
    assert lines[0] == "minislurm (not in Slurm's scontrol): why it waits, as 'minislurm why 7' says:"
    assert [line.removeprefix("  ") for line in lines[1:]] == describe(W).splitlines()
