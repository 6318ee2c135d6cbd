"""seff's text, offline: what Slurm 22.05's contribs/seff prints for each state (issue 20, item 8)."""

from __future__ import annotations

from minislurm.cli.seff import report

JOB = {"job_id": 7, "step": None, "user": "ann", "exit_code": 0, "nnodes": 1, "req_mem": 1024,
       "total_cpu": 3.0, "start": 100.0, "end": 110.0}


def test_a_pending_job_has_no_efficiency():
    """seff counts one core for a job with none allocated yet and stops there."""
    rows = [dict(JOB, state="PENDING", alloc_cpus=0, nnodes=2, start=None, end=None, total_cpu=0.0)]
    assert report(rows, now=200.0) == ("Job ID: 7\nUser/Group: ann/ann\nState: PENDING\nCores: 1\n"
                                       "Efficiency not available for jobs in the PENDING state.\n")


def test_a_running_job_warns_after_its_figures_and_shows_no_exit_code():
    rows = [dict(JOB, state="RUNNING", alloc_cpus=1, end=None)]
    lines = report(rows, now=110.0).splitlines()
    assert lines[2:4] == ["State: RUNNING", "Cores: 1"]
    assert lines[4] == "CPU Utilized: 00:00:03"
    assert lines[-1] == "WARNING: Efficiency statistics may be misleading for RUNNING jobs."


def test_more_than_one_core_is_given_per_node_even_on_one_node():
    rows = [dict(JOB, state="COMPLETED", alloc_cpus=2)]
    lines = report(rows, now=200.0).splitlines()
    assert lines[2:5] == ["State: COMPLETED (exit code 0)", "Nodes: 1", "Cores per node: 2"]
    assert lines[5:7] == ["CPU Utilized: 00:00:03", "CPU Efficiency: 15.00% of 00:00:20 core-walltime"]
