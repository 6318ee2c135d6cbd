"""dask-jobqueue's SLURMCluster (requirements-clients.txt) on minislurm: see dask_session.py."""

from __future__ import annotations

from clientkit import run_session


def test_a_slurm_cluster_scales_computes_and_closes(clients_python, cluster, tmp_path):
    seen = run_session(clients_python, "dask_session.py", cluster, str(tmp_path / "dask"))
    assert "#SBATCH" in seen["script"] and "-p gpu" in seen["script"]
    assert len(seen["jobs"]) == 2 and {state for _, _, state in seen["jobs"]} == {"RUNNING"}
    assert seen["total"] == sum(x * x for x in range(100))
    assert sorted(seen["worker_job_ids"]) == sorted(job_id for job_id, _, _ in seen["jobs"])
    assert seen["left"] == []  # close() cancelled the workers' jobs
