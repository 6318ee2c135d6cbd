"""torchx (requirements-clients.txt) on minislurm: ``dist.ddp -j 2x2`` as a heterogeneous job,
then status, log, list and cancel; see torchx_session.py.

torchrun meets its peers at ``$SLURM_JOB_NODELIST_HET_GROUP_0``, a node name: the cluster is a
:class:`~clientkit.InstalledCluster` (node names resolve in its jobs), which needs root."""

from __future__ import annotations

import os
import socket

import pytest
from clientkit import InstalledCluster, run_session
from livekit import started

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="node names resolve in a mount namespace: root only")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(420)
def test_ddp_two_by_two_trains_on_two_nodes_then_status_log_list_cancel(clients_python, tmp_path):
    with started(tmp_path, cluster_class=InstalledCluster) as live:
        seen = run_session(clients_python, "torchx_session.py", live, str(_free_port()), timeout=360)
    app = seen["app_id"]
    # one heterogeneous job, a component per node, both ran to the end
    assert seen["sacct"] == [f"{app}+0|train-0|COMPLETED|gpu01", f"{app}+1|train-1|COMPLETED|gpu02"]
    assert seen["states"][-1] == "SUCCEEDED" and "train[0]:SUCCEEDED" in seen["status"]
    assert "train[1]:SUCCEEDED" in seen["status"]
    # torchx log read each replica's srun -o file: four ranks, one world, two per node
    results = seen["results"]
    assert [r["rank"] for r in results] == [0, 1, 2, 3] and {r["world"] for r in results} == {4}
    assert sorted(r["node"] for r in results) == ["gpu01", "gpu01", "gpu02", "gpu02"]
    assert sorted(r["local_rank"] for r in results) == [0, 0, 1, 1]
    assert all(r["same_weights"] and r["loss"] < 0.01 for r in results), results  # DDP kept them in step
    # torchx list (sacct --json): every component's record; the cancelled run's are CANCELLED
    second = int(seen["second"])
    assert seen["second_states"][-1] == "RUNNING"
    assert seen["list"][app] == "SUCCEEDED" and seen["list"][str(int(app) + 1)] == "SUCCEEDED"
    assert seen["list"][str(second)] == seen["list"][str(second + 1)] == "CANCELLED"
