"""Parsl's SlurmProvider (requirements-clients.txt) on minislurm: see parsl_session.py."""

from __future__ import annotations

from clientkit import run_session


def test_two_blocks_run_apps_and_are_cancelled_at_cleanup(clients_python, cluster, tmp_path):
    seen = run_session(clients_python, "parsl_session.py", cluster, str(tmp_path / "runinfo"))
    assert seen["doubled"] == [2 * i for i in range(20)]
    blocks = sorted(job_id for job_id, _ in seen["squeue"])
    assert len(blocks) == 2 and {state for _, state in seen["squeue"]} == {"RUNNING"}
    assert set(seen["jobs_used"]) <= set(blocks) and seen["provider_status"] == dict.fromkeys(blocks, "RUNNING")
    assert seen["left"] == []
