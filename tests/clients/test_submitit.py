"""submitit (requirements-clients.txt) on minislurm, as its users drive it: see submitit_session.py."""

from __future__ import annotations

import pytest
from clientkit import run_session


def test_values_arrays_and_the_state_of_many_jobs_at_once(clients_python, cluster, tmp_path):
    seen = run_session(clients_python, "submitit_session.py", cluster, "values", str(tmp_path / "log"))
    assert seen["value"] == 5 and seen["array"] == [0, 1, 4, 9] and seen["many"] == [0, 2, 4, 6, 8]
    assert "UNKNOWN" not in seen["states_seen"] and seen["final"] == ["COMPLETED"]
    array = {i.split("_")[0] for i in seen["array_ids"]}
    assert len(array) == 1 and [i.split("_")[1] for i in seen["array_ids"]] == ["0", "1", "2", "3"]


def test_a_two_by_two_job_environment(clients_python, cluster, tmp_path):
    seen = run_session(clients_python, "submitit_session.py", cluster, "environment", str(tmp_path / "log"))
    tasks = seen["tasks"]
    assert seen["state"] == "COMPLETED" and [t["global_rank"] for t in tasks] == [0, 1, 2, 3]
    assert [t["local_rank"] for t in tasks] == [0, 1, 0, 1] and [t["node"] for t in tasks] == [0, 0, 1, 1]
    assert {t["num_tasks"] for t in tasks} == {4} and {t["num_nodes"] for t in tasks} == {2}
    assert {tuple(t["hostnames"]) for t in tasks} == {("gpu01", "gpu02")}
    assert all(len(t["gpus"].split(",")) == 2 for t in tasks), tasks


def test_cancel_ends_the_wait_for_a_result(clients_python, cluster, tmp_path):
    seen = run_session(clients_python, "submitit_session.py", cluster, "cancel", str(tmp_path / "log"))
    assert seen["before"] == "RUNNING" and seen["outcome"].startswith("UncompletedJobError")
    assert seen["state"].startswith("CANCELLED")


@pytest.mark.timeout(400)
def test_a_checkpointable_job_is_requeued_and_resumes(clients_python, cluster, tmp_path):
    """Preempted (USR2 by scancel --signal, as submitit tests it), then out of time (USR2 from
    --signal before the limit): checkpointed and requeued both times, resuming each time."""
    seen = run_session(clients_python, "submitit_session.py", cluster, "requeue", str(tmp_path / "log"),
                       timeout=360)
    assert seen["result"]["count"] == 30 and seen["result"]["runs"] >= 3, seen
    starts = seen["starts"]
    assert starts[0] == 0 and all(a < b for a, b in zip(starts, starts[1:])), starts
    assert seen["state"] == "COMPLETED"
