"""Authentication and permissions on a live cluster (reference 5.5, JWT mode; 5.3 and 6.4 for
who may act on a job), and malformed requests to both daemons."""

from __future__ import annotations

import base64
import http.client
import json
import os
import pwd
import re
import shutil
import time

import pytest

from livekit import unix_users, until

pytestmark = pytest.mark.live
USER = "mslauthalice"  # a real Unix user for jobs run as someone else; this module's own (unix_users)
SHARED_ROOT = True  # so that user can reach the spooled script


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def token_for(live, user: str, lifespan: int | None = None) -> str:
    args = ["scontrol", "token", f"username={user}"] + ([f"lifespan={lifespan}"] if lifespan else [])
    r = live.run(*args)
    assert r.returncode == 0 and r.stdout.startswith("SLURM_JWT=") and r.stdout.count("\n") == 1, r
    return r.stdout.strip().split("=", 1)[1]


def test_scontrol_token_prints_slurm_jwt(live):
    token = token_for(live, "alice", 60)
    claims = _claims(token)
    assert claims["sun"] == "alice" and claims["exp"] - claims["iat"] == 60
    # a user may mint tokens for themselves only
    r = live.run("scontrol", "token", "username=root", env={"SLURM_JWT": token})
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "scontrol: error: Access/permission denied\n")


def test_missing_bad_and_expired_tokens_are_refused(live, tmp_path):
    shutil.copy(live.c.conf_path, tmp_path / "slurm.conf")  # a slurm.conf with no token beside it
    r = live.run("squeue", env={"SLURM_CONF": str(tmp_path / "slurm.conf")})
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("slurm_load_jobs error: Invalid authentication credential: no token "
                        "(set SLURM_JWT or run `scontrol token`)\n")
    r = live.run("sbatch", "--wrap", "true", env={"SLURM_JWT": "not-a-token"})
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("sbatch: error: Batch job submission failed: "
                        "Invalid authentication credential: Invalid JWT token\n")
    expired = token_for(live, "root", 1)
    time.sleep(2.1)
    r = live.run("scancel", "1", env={"SLURM_JWT": expired})
    assert (r.returncode, r.stderr) == (1, "scancel: error: Kill job error on job id 1: "
                                           "Invalid authentication credential: Expired JWT token\n")
    # a token signed with another key is no token of this cluster
    forged = token_for(live, "root")
    head, body, sig = forged.split(".")
    r = live.run("squeue", env={"SLURM_JWT": f"{head}.{body}.{sig[::-1]}"})
    assert (r.returncode, r.stderr) == (1, "slurm_load_jobs error: Invalid authentication credential: "
                                           "Invalid JWT token\n")


def test_no_controller_there(live, tmp_path):
    from minislurm.cluster.confgen import free_port
    conf = re.sub(r"SlurmctldPort=\d+", f"SlurmctldPort={free_port()}", live.c.conf_path.read_text())
    conf += "MessageTimeout=1\n"  # how long a command keeps trying to connect (tests/cli/test_client.py)
    (tmp_path / "slurm.conf").write_text(conf)
    down = "Unable to contact slurm controller (connect failure)"
    for argv, message in ((("squeue",), f"slurm_load_jobs error: {down}"),
                          (("sinfo",), f"slurm_load_partitions: {down}"),
                          (("scontrol", "show", "node"), f"slurm_load_node error: {down}"),
                          (("sbatch", "--wrap", "true"), f"sbatch: error: Batch job submission failed: {down}")):
        r = live.run(*argv, env={"SLURM_CONF": str(tmp_path / "slurm.conf"), "SLURM_JWT": live.api.token})
        assert (r.returncode, r.stdout, r.stderr) == (1, "", message + "\n"), argv


def test_no_cluster_at_all_is_one_error_line_from_every_command(live, tmp_path):
    missing = tmp_path / "nowhere" / "slurm.conf"
    why = (f"Unable to contact slurm controller (no slurm.conf at {missing}; "
           "start a cluster with `minislurm cluster up` or set SLURM_CONF)")
    for argv, message in ((("squeue",), f"slurm_load_jobs error: {why}"),
                          (("sinfo",), f"slurm_load_partitions: {why}"),
                          (("sbatch", "--wrap", "true"), f"sbatch: error: Batch job submission failed: {why}"),
                          (("srun", "true"), f"srun: error: Unable to allocate resources: {why}"),
                          (("scancel", "7"), f"scancel: error: Kill job error on job id 7: {why}"),
                          (("sacct",), f"sacct: error: {why}")):
        r = live.run(*argv, env={"SLURM_CONF": str(missing), "SLURM_JWT": live.api.token})
        assert (r.returncode, r.stdout, r.stderr) == (1, "", message + "\n"), argv


def test_users_may_not_touch_other_users_jobs(live):
    mine = live.sbatch("--wrap", "sleep 60")
    pend = live.sbatch("--begin=now+1hour", "--wrap", "true")
    live.wait(mine, "RUNNING")
    alice = {"SLURM_JWT": token_for(live, "alice")}
    checks = [
        (("scancel", str(mine)), f"scancel: error: Kill job error on job id {mine}: Access/permission denied\n"),
        (("scontrol", "requeue", str(mine)), f"Access/permission denied for job {mine}\n"),
        (("scontrol", "hold", str(pend)), f"Access/permission denied for job {pend}\n"),
        (("scontrol", "release", str(pend)), f"Access/permission denied for job {pend}\n"),
        (("scontrol", "update", f"JobId={pend}", "TimeLimit=5"), f"Access/permission denied for job {pend}\n"),
    ]
    for argv, message in checks:
        r = live.run(*argv, env=alice)
        assert (r.returncode, r.stderr) == (1, message), argv
    assert live.job(mine)["state"] == "RUNNING" and live.job(mine)["restart_count"] == 0
    assert live.job(pend)["time_limit"] is None and live.job(pend)["hold"] is None
    # reading is allowed to everyone
    r = live.run("squeue", "-h", "-o", "%i", env=alice)
    assert {str(mine), str(pend)} <= set(r.stdout.split())
    for job_id in (mine, pend):
        assert live.run("scancel", str(job_id)).returncode == 0


@pytest.fixture(scope="module")
def unix_user():
    """A throwaway Unix user to run jobs as (root only)."""
    if os.geteuid() != 0:
        pytest.skip("running a job as another user needs root (the agents switch to the job's user)")
    with unix_users(USER):
        yield pwd.getpwnam(USER)


def test_an_owner_may_shorten_a_time_limit_but_not_lengthen_it(live, unix_user):
    """As Slurm 22.05 answers the job's own user on the twin: a shorter limit is taken, a longer one
    is the operator's to give (tests/live/sessions.py time_limits shows the shorter one end to end)."""
    env = {"SLURM_JWT": token_for(live, USER)}
    job_id = live.sbatch("--hold", "-t", "60", "--wrap", "true", env=env)
    r = live.run("scontrol", "update", f"JobId={job_id}", "TimeLimit=2:00:00", env=env)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"Access/permission denied for job {job_id}\n")
    r = live.run("scontrol", "update", f"JobId={job_id}", "TimeLimit=30", env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert live.job(job_id)["time_limit"] == 30 * 60
    assert live.run("scancel", str(job_id), env=env).returncode == 0


def test_jobs_run_as_their_owner_and_the_operator_may_cancel_them(live, unix_user):
    env = {"SLURM_JWT": token_for(live, USER)}
    home = live.work / USER  # a work dir of their own, as on a real cluster: the job's user writes there
    home.mkdir(mode=0o700, exist_ok=True)
    os.chown(home, unix_user.pw_uid, unix_user.pw_gid)
    job_id = live.sbatch("-o", "owner-%j.out", "--wrap", "id -un; id -u; echo $SLURM_JOB_USER $SLURM_JOB_UID; "
                         "sleep 60", env=env, cwd=str(home))
    out = home / f"owner-{job_id}.out"
    until(lambda: out.exists() and len(out.read_text().splitlines()) == 3, 10, "the job to say who it is")
    assert out.read_text() == f"{USER}\n{unix_user.pw_uid}\n{USER} {unix_user.pw_uid}\n"
    assert os.stat(out).st_uid == unix_user.pw_uid
    processes = live.job_processes(job_id)
    assert processes and all(os.stat(f"/proc/{pid}").st_uid == unix_user.pw_uid for pid, _ in processes)
    assert live.job(job_id)["user"] == USER
    # the operator (the user who started the cluster) may act on anyone's job
    r = live.run("scontrol", "update", f"JobId={job_id}", "TimeLimit=30")
    assert (r.returncode, r.stderr) == (0, "")
    assert live.job(job_id)["time_limit"] == 30 * 60
    later = live.sbatch("--begin=now+1hour", "--wrap", "true", env=env, cwd=str(home))
    assert live.run("scontrol", "hold", str(later)).returncode == 0
    assert (live.job(later)["hold"], live.job(later)["reason"]) == ("admin", "JobHeldAdmin")
    r = live.run("scontrol", "release", str(later), env=env)  # an admin hold is the admin's to release
    assert (r.returncode, r.stderr) == (1, f"Access/permission denied for job {later}\n")
    assert live.run("scontrol", "release", str(later)).returncode == 0
    assert live.job(later)["hold"] is None
    assert live.run("scancel", str(later), env=env).returncode == 0
    r = live.run("scontrol", "requeue", str(job_id))
    assert (r.returncode, r.stderr) == (0, "")
    # back after the requeue delay, as its owner again
    until(lambda: live.job(job_id)["restart_count"] == 1 and live.job(job_id)["state"] == "RUNNING", 15,
          "the second run")
    until(lambda: len(out.read_text().splitlines()) == 3, 10, "the second run to say who it is")
    assert out.read_text() == f"{USER}\n{unix_user.pw_uid}\n{USER} {unix_user.pw_uid}\n"
    assert live.run("scancel", str(job_id)).returncode == 0
    assert live.wait(job_id)["state"] == "CANCELLED"
    until(lambda: not live.job_processes(job_id), 10, "the job's processes to end")
    r = live.run("sacct", "-X", "-j", str(job_id), "-o", "User,State", "--parsable2", "-n")
    assert r.stdout == f"{USER}|CANCELLED by 0\n"
    # and the owner may cancel their own
    own = live.sbatch("--wrap", "sleep 60", env=env, cwd=str(home))
    live.wait(own, "RUNNING")
    r = live.run("scancel", str(own), env=env)
    assert (r.returncode, r.stderr) == (0, "")
    assert live.wait(own)["state"] == "CANCELLED"
    assert live.run("sacct", "-X", "-j", str(own), "-o", "State", "--parsable2", "-n").stdout == \
        f"CANCELLED by {unix_user.pw_uid}\n"


def _raw(host: str, port: int, method: str, path: str, body: bytes | None, token: str | None = None):
    conn = http.client.HTTPConnection(host, port, timeout=10)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.getheader("Content-Type", ""), resp.read()


def test_malformed_requests_get_400_and_the_daemons_live_on(live):
    host, port = live.api.address
    token = live.api.token
    status, kind, body = _raw(host, port, "GET", "/api/v1/jobs", None)
    assert (status, json.loads(body)["error"].startswith("Invalid authentication credential")) == (401, True)
    cases = [("POST", "/api/v1/jobs", b"{not json"), ("POST", "/api/v1/jobs", b"[1, 2]"),
             ("POST", "/api/v1/jobs", b'{"spec": {"nodes_min": "two"}}'),
             ("POST", "/api/v1/jobs", b'{"spec": "x"}'),
             ("POST", "/api/v1/jobs/1/cancel", b'{"uid": "root"}'),
             ("POST", "/api/v1/nodes/update", b'{"state": "DOWN"}'),
             ("GET", "/api/v1/jobs?ids=x,y", None)]
    for method, path, data in cases:
        status, kind, body = _raw(host, port, method, path, data, token)
        assert status == 400 and kind.startswith("application/json"), (path, data, status, body)
        assert json.loads(body)["error"], body
    status, _, body = _raw(host, port, "GET", "/api/v1/jobs/abc", None, token)
    assert (status, json.loads(body)) == (404, {"error": "Invalid job id specified"})
    # an agent: malformed JSON, and a launch without a credential
    agent = live.agent_address("gpu01")
    for path, data in (("/steps/launch", b"{oops"), ("/steps/signal", b"[]"), ("/steps/launch", b"{}")):
        status, kind, body = _raw(*agent, "POST", path, data)
        assert status in (400, 401) and kind.startswith("application/json"), (path, status, body)
    assert all(p.poll() is None for p in live.c.procs.values())
    job_id = live.sbatch("--wrap", "true")
    assert live.wait(job_id)["state"] == "COMPLETED"


def test_a_user_unknown_on_the_nodes_is_refused_at_submission(live):
    """A token may name anyone (an operator mints it): a job of a user the nodes do not know
    is refused with Slurm's "Invalid user id", instead of being sent to a node that cannot run
    it and is drained for everyone ("user ghost not found", issue 21 item 8)."""
    if os.geteuid() != 0:
        pytest.skip("a personal cluster runs every job as its owner, whatever the token's name")
    ghost = "ghost" + os.urandom(5).hex()
    with pytest.raises(KeyError):
        pwd.getpwnam(ghost)
    env = {"SLURM_JWT": token_for(live, ghost)}
    before = live.api.call("GET", "/jobs")["jobs"]
    r = live.run("sbatch", "--wrap", "true", env=env)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "sbatch: error: Batch job submission failed: "
                                                         "Invalid user id\n")
    r = live.run("srun", "-N1", "true", env=env)
    assert (r.returncode, r.stderr) == (1, "srun: error: Unable to allocate resources: Invalid user id\n")
    assert live.api.call("GET", "/jobs")["jobs"] == before
    assert all(n["state"] == "idle" for n in live.api.call("GET", "/nodes")["nodes"])
    job = live.sbatch("-o", "/dev/null", "--wrap", "true")  # a known user's job runs as ever
    assert live.wait(job)["state"] == "COMPLETED"
