"""A cluster started inside a job of another: a lab's own small cluster, run in a JupyterHub
session whose notebook server is a Slurm job (tests/docker/test_hub.py runs one there).  Every
job's environment carries the outer cluster's ``SLURM_JWT``; the lab's cluster must use its own
token, for its commands and for its own calls alike."""

from __future__ import annotations

import pytest

from minislurm.cluster import LocalCluster

pytestmark = pytest.mark.daemons  # a controller and an agent


def test_a_cluster_started_inside_a_job_talks_with_its_own_token(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_JWT", "e30.e30.the-outer-clusters-job-token")  # what every job gets
    # Before: up() failed waiting for its nodes, "Invalid authentication credential: Invalid JWT token".
    with LocalCluster(1, 1, dir=tmp_path / "cluster") as c:
        assert [n["name"] for n in c.client().call("GET", "/nodes")["nodes"]] == ["gpu01"]
        r = c.run("sinfo", "-h", "-o", "%N %t")
        assert (r.returncode, r.stdout) == (0, "gpu01 idle\n")
