"""batchspawner's SlurmSpawner (requirements-clients.txt) on minislurm, as JupyterHub drives
it: start, the squeue query, poll, stop; see batchspawner_session.py.

JupyterHub gives a spawner neither PATH nor SLURM_CONF: the commands are found where a real
Slurm's are, in /usr/local/bin, and find their cluster by what they carry (a ``--system``
cluster's shims), on an :class:`~clientkit.InstalledCluster`, which needs root."""

from __future__ import annotations

import os

import pytest
from clientkit import InstalledCluster, run_session
from livekit import started

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="commands in /usr/local/bin of a mount namespace: root only")


def test_slurm_spawner_starts_a_server_as_a_job_polls_and_stops_it(clients_python, tmp_path):
    with started(tmp_path, cluster_class=InstalledCluster) as live:
        seen = run_session(clients_python, "batchspawner_session.py", live, str(live.work), timeout=200,
                           prefix=live.c.installed())
        job = seen["job_id"]
        acct = live.run("sacct", "-j", job, "-n", "-P", "-o", "JobID,JobName,State").stdout.splitlines()
    assert "PATH" not in seen["env_keys"] and "SLURM_CONF" not in seen["env_keys"]  # JupyterHub's environment
    assert seen["status"] == "RUNNING gpu01" and seen["ip"] == "gpu01"  # squeue -o '%T %B', as parsed
    assert seen["port"] > 0 and seen["answer"] == f"gpu01 {job}"  # the server runs inside the job
    assert seen["running_poll"] is None and seen["stopped_poll"] == 1 and seen["job_id_after"] == ""
    assert acct[0].startswith(f"{job}|spawner-jupyterhub|CANCELLED")  # stop() cancelled it
    assert acct[2] == f"{job}.0|batchspawner-singleuser|CANCELLED"
