"""Snakemake with its Slurm executor plugin (requirements-clients.txt) on minislurm: see
snakemake_session.py."""

from __future__ import annotations

from clientkit import run_session


def test_a_three_rule_workflow_runs_as_slurm_jobs_and_ends_by_itself(clients_python, cluster, tmp_path):
    seen = run_session(clients_python, "snakemake_session.py", cluster, str(tmp_path / "flows"), timeout=280)
    assert seen["rc"] == 0 and seen["c"] == "a\nb\nc\n", seen["log"]
    assert "3 of 4 steps (75%) done" in seen["log"] and "4 of 4 steps (100%) done" in seen["log"]
    rows = [line.split("|") for line in seen["sacct"]]
    assert len(rows) == 3 and {(state, account, part) for _, state, account, part in rows} == {
        ("COMPLETED", "root", "gpu")}
    assert seen["refused_rc"] != 0 and "The given account nosuch appears to be invalid" in seen["refused"]
