"""Issue 9, item 8 on a live cluster: one user's malformed request to the controller's API must
not break the cluster for everyone.

Each request below was accepted before the API validated its input, and then broke ``squeue``
and ``sacct`` for every user (a job with ``begin: "x"``, ``stdout: 5``, ``job_name: {}``), every
scheduling pass (``time_limit_min: "x"``), or looped a job through NODE_FAIL and requeue
(``environment: {"A": 5}``).  Now each is refused with Slurm's text, nothing is queued, every
user's commands still work, and a good job still runs.
"""

from __future__ import annotations

import http.client
import json

import pytest

pytestmark = pytest.mark.live


def _post(live, path: str, body, token: str) -> tuple[int, dict]:
    host, port = live.api.address
    conn = http.client.HTTPConnection(host, port, timeout=10)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", "/api/v1" + path, body=data, headers={"Authorization": f"Bearer {token}"})
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read())


def _submission(live, **spec) -> dict:
    return {"spec": {"time_limit_min": 5, **spec}, "script": "#!/bin/sh\ntrue\n", "environment": {"PATH": "/usr/bin"},
            "work_dir": str(live.work), "stdout": "/dev/null", "batch": True}


BAD = [
    ("begin", {"begin": "x"}, {}, "Invalid time specified: spec.begin expected a number or null"),
    ("stdout", {}, {"stdout": 5}, "Invalid value for stdout: expected a string"),
    ("job_name", {"job_name": {}}, {}, "Invalid value for spec.job_name: expected a string or null"),
    ("time_limit", {"time_limit_min": "x"}, {},
     "Requested time limit is invalid (missing or exceeds some limit): spec.time_limit_min expected a number "
     "of minutes above 0 (at most 4294967294) or INFINITE"),
    ("environment", {}, {"environment": {"A": 5}}, "Invalid value for environment.A: expected a string"),
    ("gpus", {"gpus_per_node": ["a100", "2"]}, {},
     "Invalid generic resource (gres) specification: spec.gpus_per_node.1 expected an integer"),
    ("negative", {"nodes_min": -2}, {}, "Node count specification invalid: spec.nodes_min must be at least 0"),
    ("huge", {"ntasks": 10**40}, {}, "Task count specification invalid: spec.ntasks must be at most 2147483647"),
    ("array", {"array": None, "dependency": None, "signal": None}, {"argv": [1]},
     "Invalid value for argv.0: expected a string"),
]


@pytest.fixture(scope="module")
def user_token(live):
    return live.api.call("POST", "/token", {"username": "alice"})["token"]


def _everyone_can_look(live, user_token) -> None:
    for env in ({}, {"SLURM_JWT": user_token}):
        for argv in (("squeue",), ("squeue", "-a", "-t", "all"), ("sacct", "-a", "-X"), ("scontrol", "show", "job"),
                     ("sinfo",), ("scontrol", "show", "reservation")):
            r = live.run(*argv, env=env)
            assert r.returncode == 0 and not r.stderr, (argv, env, r.stderr)


@pytest.mark.parametrize("spec,top,message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_malformed_submission_is_refused_and_the_cluster_goes_on(live, user_token, spec, top, message):
    before = {j["job_id"] for j in live.api.call("GET", "/jobs", query={"states": "PENDING,RUNNING"})["jobs"]}
    status, reply = _post(live, "/jobs", {**_submission(live, **spec), **top}, user_token)
    assert (status, reply) == (400, {"error": message})
    after = {j["job_id"] for j in live.api.call("GET", "/jobs", query={"states": "PENDING,RUNNING"})["jobs"]}
    assert after == before
    _everyone_can_look(live, user_token)


def test_the_controller_still_schedules_after_them(live, user_token):
    job_id = live.sbatch("-o", "/dev/null", "-J", "INFINITE", "--wrap", "true")  # once read as a time limit
    assert live.wait(job_id)["state"] == "COMPLETED" and live.job(job_id)["name"] == "INFINITE"
    r = live.run("sacct", "-X", "-n", "-P", "-j", str(job_id), "-o", "JobName,State", env={"SLURM_JWT": user_token})
    assert r.stdout == "INFINITE|COMPLETED\n"
    log = (live.c.dir / "log" / "slurmctld.log").read_text()
    for sign in (" failed\nTraceback", "Exception in callback", "periodic "):
        assert sign not in log, log[log.index(sign) - 300:][:3000]


def test_reservations_refuse_bad_times_and_a_refused_update_changes_nothing(live, user_token):
    token = live.api.token
    status, reply = _post(live, "/reservations", {"name": "bad", "nodes": "gpu01", "start": "nan", "users": "alice"},
                          token)
    assert (status, reply) == (400, {"error": "Invalid time specified: start expected a number or null"})
    r = live.run("scontrol", "create", "reservation", "ReservationName=edge", "Nodes=gpu01", "StartTime=now+3600",
                 "Duration=60", "Users=root")
    assert r.returncode == 0, r.stderr
    shown = live.run("scontrol", "show", "reservation", "edge").stdout
    for body in ({"nodes": "gpu02", "duration": "x"}, {"nodes": "gpu02", "users": 5},
                 {"nodes": "gpu02", "end": 1.0}):
        assert _post(live, "/reservations/edge", body, token)[0] == 400
        assert live.run("scontrol", "show", "reservation", "edge").stdout == shown
    r = live.run("scontrol", "update", "ReservationName=edge", "EndTime=2000-01-01")
    assert (r.returncode, r.stderr) == (1, "Error updating the reservation: Invalid time specified\n"
                                        "slurm_update error: Invalid time specified\n")
    assert live.run("scontrol", "show", "reservation", "edge").stdout == shown
    _everyone_can_look(live, user_token)
    assert live.run("scontrol", "delete", "reservation", "edge").returncode == 0
