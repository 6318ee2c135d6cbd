"""The node agent's trust boundary on a shared classroom cluster (issue 9): agents run as root,
jobs as ordinary users, and a hostile student holds their own tokens and step credentials.

Defect 1: a job's files and folders are opened, created and read as the job's user.
Defect 2: a step runs as the credential says (user, GPUs, tasks), never as the request body
says; a credential is short-lived, used once, dead once its job has ended, and no token.
Defect 3: a credential of an earlier incarnation acts on nothing of the run after a requeue.
Defect 10 (part): a token without ``exp`` is refused.
"""

from __future__ import annotations

import http.client
import json
import os
import pwd
import time
from dataclasses import dataclass
from pathlib import Path

import jwt
import pytest

from livekit import on_terminal, unix_users, until
from minislurm.client import ClientError
from minislurm.common.auth import Signer, load_key

pytestmark = pytest.mark.live
SHARED_ROOT = True  # the users must reach the spooled scripts
NAMES = ("msltrustann", "msltrustbob")  # this module's own: see livekit.unix_users
SECRET = "root's secret\n"


@dataclass
class User:
    name: str
    uid: int
    gid: int
    work: Path  # their own work dir, mode 0700
    token: str

    @property
    def env(self) -> dict:
        return {"SLURM_JWT": self.token}


@pytest.fixture(scope="module")
def users(live):
    """Two throwaway unprivileged users, each with a private work dir; root's own files beside."""
    if os.geteuid() != 0:
        pytest.skip("a shared cluster needs root: the agents switch to each job's user")
    with unix_users(*NAMES):
        yield made_for(live)


def made_for(live) -> list[User]:
    root = live.work.parent
    found = {}
    for name in NAMES:
        pw = pwd.getpwnam(name)
        work = root / f"home-{name}"
        work.mkdir(mode=0o700)
        os.chown(work, pw.pw_uid, pw.pw_gid)
        token = live.api.call("POST", "/token", {"username": name})["token"]
        found[name] = User(name, pw.pw_uid, pw.pw_gid, work, token)
    (root / "rootonly").mkdir(mode=0o700)
    secret = root / "rootonly" / "secret"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    (root / "rootfile").write_text("precious\n")
    (root / "rootfile").chmod(0o644)
    return [found[n] for n in NAMES]


# -- helpers ----------------------------------------------------------------------------------
def submit(live, user: User, *args: str, script: str | None = None, env: dict | None = None) -> int:
    return live.sbatch(*args, script=script, env={**user.env, **(env or {})}, cwd=str(user.work))


def failed_at_launch(live, job_id: int) -> bool:
    """As Slurm 22.05 records a script whose files could not be opened (checked on the twin):
    FAILED, JobLaunchFailure, ExitCode 0:53, the batch step CANCELLED 0:53."""
    job = live.wait(job_id)
    steps = {r["step"]: (r["state"], f"{r['exit_code']}:{r['exit_signal']}") for r in live.acct(job_id)}
    return ((job["state"], job["reason"], job["exit_code"]) == ("FAILED", "JobLaunchFailure", "0:53")
            and steps == {None: ("FAILED", "0:53"), "batch": ("CANCELLED", "0:53")})


def new_step(live, user: User, job_id: int, **req) -> dict:
    """What srun gets from the controller: the step, its credential, the agents' addresses.  The
    steps here are never ended through srun, so they share their job (``srun --overlap``)."""
    return live.c.client(user.token).call("POST", f"/jobs/{job_id}/steps", {"overlap": True, **req})


def step_body(step: dict, argv: list[str], cwd: str, **forged) -> dict:
    """srun's request to an agent.  It also carries the fields older agents read from the body
    (``step``), so that a forged value would reach an agent that trusts the body."""
    layout = {k: step[k] for k in ("step_id", "nodes", "tasks_per_node", "task_ids", "ntasks", "step_gpus")}
    body = {"credential": step["credential"], "job": dict(step["job"]), "step": layout, "argv": argv,
            "environment": {"PATH": "/usr/bin:/bin"}, "cwd": cwd}
    for key, value in forged.items():
        target, field = key.split("__")
        body[target][field] = value
    return body


def post(addr: str, path: str, body: dict) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return conn, conn.getresponse()


def run_step(addr: str, body: dict) -> tuple[int, dict]:
    """Launch and wait: (HTTP status, {"out": ..., "err": ..., "exit": ...} or the error body)."""
    conn, resp = post(addr, "/steps/launch", body)
    if resp.status != 200:
        return resp.status, json.loads(resp.read())
    seen = {"out": "", "err": "", "exit": []}
    for line in resp.read().decode().splitlines():
        msg = json.loads(line)
        if "o" in msg:
            seen["out"] += msg["o"]
        elif "e" in msg:
            seen["err"] += msg["e"]
        elif "exit" in msg:
            seen["exit"].append((msg["exit"], msg["sig"]))
    conn.close()
    return 200, seen


def start_step(addr: str, body: dict):
    """Launch a long step and leave it running (the open connection is srun staying)."""
    conn, resp = post(addr, "/steps/launch", body)
    assert resp.status == 200, resp.read()
    assert "started" in json.loads(resp.readline())
    return conn


def signal_step(addr: str, credential: str, signum: int) -> dict:
    conn, resp = post(addr, "/steps/signal", {"credential": credential, "signal": signum})
    return json.loads(resp.read())


def step_processes(live, job_id: int, marker: str) -> list:
    return [p for p in live.job_processes(job_id) if marker in p[1]]


def snapshot(*paths: Path, top_only: tuple[Path, ...] = ()) -> dict:
    """Every entry under ``paths`` with what a change would alter, and the names right inside
    ``top_only`` (whose entries others may change meanwhile: /tmp, ...)."""
    seen = {}

    def note(p: str) -> None:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return
        seen[p] = (st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns)

    for path in paths:
        note(str(path))
        for folder, dirs, files in os.walk(path):
            for name in dirs + files:
                note(os.path.join(folder, name))
    for path in top_only:
        for name in os.listdir(path):
            seen.setdefault(os.path.join(path, name), "present")
    return seen


# -- defect 1: files are the user's business, opened by the user ---------------------------------
def test_a_root_owned_output_file_is_neither_truncated_nor_taken(live, users):
    ann, _ = users
    target = live.work.parent / "rootfile"
    job_id = submit(live, ann, "-o", str(target), "--wrap", "echo owned")
    assert failed_at_launch(live, job_id)
    st = os.stat(target)
    assert (target.read_text(), st.st_uid, st.st_mode & 0o777) == ("precious\n", 0, 0o644)
    log = (live.c.dir / "log" / "slurmd-gpu01.log").read_text()
    assert f"[{job_id}.batch] error: Could not open stdout file {target}: Permission denied" in log


def test_a_root_only_input_file_is_not_read(live, users):
    ann, _ = users
    secret = live.work.parent / "rootonly" / "secret"
    job_id = submit(live, ann, "-i", str(secret), "-o", "in-%j.out", "--wrap", "cat")
    assert failed_at_launch(live, job_id)
    assert not (ann.work / f"in-{job_id}.out").exists()  # stdin is opened first, as in Slurm


def test_a_missing_output_folder_is_not_created(live, users):
    ann, _ = users
    for folder in (ann.work / "not-yet", live.work.parent / "made-by-root"):
        job_id = submit(live, ann, "-o", str(folder / "x.out"), "--wrap", "echo hi")
        assert failed_at_launch(live, job_id)
        assert not folder.exists()


def test_a_step_starts_in_its_folder_as_the_user_or_in_tmp(live, users):
    ann, bob = users
    job_id = submit(live, ann, "--wrap", "sleep 60")
    live.wait(job_id, "RUNNING")
    step = new_step(live, ann, job_id)
    status, seen = run_step(step["addrs"]["gpu01"], step_body(step, ["sh", "-c", "pwd"], str(bob.work)))
    assert status == 200 and seen["out"] == "/tmp\n", seen
    assert seen["err"] == f"slurmstepd-gpu01: error: couldn't chdir to `{bob.work}': Permission denied: going to /tmp instead\n"
    step = new_step(live, ann, job_id)
    status, seen = run_step(step["addrs"]["gpu01"], step_body(step, ["sh", "-c", "pwd; id -un"], str(ann.work)))
    assert (status, seen["out"], seen["err"]) == (200, f"{ann.work}\n{ann.name}\n", "")
    assert live.run("scancel", str(job_id)).returncode == 0


# -- defect 2: the credential, not the body --------------------------------------------------------
def test_a_forged_body_runs_as_the_credential_says(live, users):
    ann, _ = users
    job_id = submit(live, ann, "--gres=gpu:1", "--wrap", "sleep 60")
    live.wait(job_id, "RUNNING")
    step = new_step(live, ann, job_id)
    granted = ",".join(map(str, step["step_gpus"]["gpu01"]))
    body = step_body(step, ["sh", "-c", "id -u; id -g; echo $CUDA_VISIBLE_DEVICES $SLURM_JOB_USER"], str(ann.work),
                     job__user="root", job__uid=0, job__gid=0,
                     step__step_gpus={"gpu01": [0, 1, 2, 3]}, step__task_ids=[[0, 1, 2]])
    status, seen = run_step(step["addrs"]["gpu01"], body)
    assert status == 200 and seen["out"] == f"{ann.uid}\n{ann.gid}\n{granted} {ann.name}\n", seen
    assert seen["exit"] == [(0, 0)]  # one task, as granted
    assert live.run("scancel", str(job_id)).returncode == 0


def test_credentials_are_short_lived_single_use_and_no_tokens(live, users):
    ann, _ = users
    job_id = submit(live, ann, "--wrap", "sleep 60")
    live.wait(job_id, "RUNNING")
    step = new_step(live, ann, job_id)
    claims = jwt.decode(step["credential"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] <= 120  # Slurm's cred_expire
    addr = step["addrs"]["gpu01"]
    body = step_body(step, ["sh", "-c", "echo ran"], str(ann.work))
    assert run_step(addr, body) == (200, {"out": "ran\n", "err": "", "exit": [(0, 0)]})
    assert run_step(addr, body) == (401, {"error": "Job credential replayed"})
    signer = Signer(load_key(live.c.dir / "jwt_hs256.key"))
    expired = signer.step_credential(job_id=job_id, incarnation=0, step_id=99, user=ann.name, uid=ann.uid,
                                     gid=ann.gid, tasks={"gpu01": [0]}, gpus={}, lifespan=-1)
    assert run_step(addr, dict(body, credential=expired)) == (401, {"error": "Job credential expired"})
    for_gpu01 = new_step(live, ann, job_id)["credential"]
    assert run_step("%s:%d" % live.agent_address("gpu02"), dict(body, credential=for_gpu01)) == (
        401, {"error": "Invalid job credential"})
    # a credential is no token: the API refuses it, so it cannot mint one either
    api = live.c.client(step["credential"])
    for method, path, req in (("GET", "/jobs", None), ("POST", "/token", {"username": ann.name})):
        with pytest.raises(ClientError, match="Invalid authentication credential: Invalid JWT token"):
            api.call(method, path, req)
    assert live.run("scancel", str(job_id)).returncode == 0


def test_tokens_without_exp_are_refused(live, users):
    key = load_key(live.c.dir / "jwt_hs256.key")
    r = live.run("squeue", env={"SLURM_JWT": jwt.encode({"sun": "root"}, key, algorithm="HS256")})
    assert (r.returncode, r.stderr) == (1, "slurm_load_jobs error: Invalid authentication credential: "
                                           "Invalid JWT token\n")
    host, port = live.agent_address("gpu01")
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.request("GET", "/ping", headers={"Authorization": "Bearer " + jwt.encode({"ctld": True}, key, "HS256")})
    assert conn.getresponse().status == 401


def test_the_agents_controller_routes_obey_the_controller_alone(live, users):
    ann, _ = users
    job_id = submit(live, ann, "--wrap", "sleep 60")
    live.wait(job_id, "RUNNING")
    signer = Signer(load_key(live.c.dir / "jwt_hs256.key"))
    others = {"a user token": ann.token, "a node token": signer.node_token("gpu02"),
              "a step credential": new_step(live, ann, job_id)["credential"]}
    host, port = live.agent_address("gpu01")
    for what, token in others.items():
        conn = http.client.HTTPConnection(host, port, timeout=10)
        conn.request("POST", "/jobs/terminate", body=json.dumps({"job_id": job_id, "inc": 0, "kill_wait": 0}),
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        assert conn.getresponse().status == 401, what
    assert live.job(job_id)["state"] == "RUNNING"
    assert live.run("scancel", str(job_id)).returncode == 0


def test_a_credential_starts_nothing_once_its_job_has_ended(live, users):
    ann, _ = users
    job_id = submit(live, ann, "-N2", "--wrap", "sleep 60")
    live.wait(job_id, "RUNNING")
    step = new_step(live, ann, job_id)
    assert live.run("scancel", str(job_id)).returncode == 0
    assert live.wait(job_id)["state"] == "CANCELLED"
    for node in ("gpu01", "gpu02"):  # the batch node, and a node the controller told
        status, reply = run_step(step["addrs"][node], step_body(step, ["sleep", "77"], str(ann.work)))
        assert (status, reply) == (401, {"error": "Job credential revoked"}), node
    assert not live.job_processes(job_id)


# -- defect 3: a credential of an earlier incarnation ----------------------------------------------
def test_an_earlier_incarnations_credential_acts_on_nothing_after_a_requeue(live, users):
    ann, _ = users
    job_id = submit(live, ann, "--wrap", "sleep 300")
    live.wait(job_id, "RUNNING")
    first = new_step(live, ann, job_id)  # step 0 of run 0, running
    conn0 = start_step(first["addrs"]["gpu01"], step_body(first, ["sleep", "301"], str(ann.work)))
    unused = new_step(live, ann, job_id)  # step 1 of run 0, never launched
    assert live.run("scontrol", "requeue", str(job_id)).returncode == 0
    until(lambda: live.job(job_id)["restart_count"] == 1 and live.job(job_id)["state"] == "RUNNING", 20,
          "the second run")
    second = new_step(live, ann, job_id)
    assert (first["step_id"], second["step_id"]) == (0, 0)  # step ids start again
    conn1 = start_step(second["addrs"]["gpu01"], step_body(second, ["sleep", "302"], str(ann.work)))
    addr = second["addrs"]["gpu01"]
    reply = signal_step(addr, first["credential"], 9)
    time.sleep(0.3)
    assert step_processes(live, job_id, "sleep 302")  # the new run's step 0 lives on
    assert reply == {"ok": True, "known": False}
    status, reply = run_step(addr, step_body(unused, ["sleep", "303"], str(ann.work)))
    assert (status, reply) == (401, {"error": "Job credential revoked"})
    assert not step_processes(live, job_id, "sleep 303")
    assert live.run("scancel", str(job_id)).returncode == 0
    assert live.wait(job_id)["state"] == "CANCELLED"
    until(lambda: not live.job_processes(job_id), 10, "every process of the job to end")
    conn0.close()
    conn1.close()


# -- the shared cluster ------------------------------------------------------------------------------
def test_a_pty_is_the_jobs_users_own(live, users):
    """``srun --pty``: the terminal is the user's (group tty, mode 620, as grantpt makes it),
    and only its descriptor is passed: nothing of the user's is opened by root."""
    ann = users[0]
    code, screen, _ = on_terminal([str(live.c.dir / "bin" / "srun"), "--pty", "bash", "-c",
                                   'stat -c "%U %G %a" "$(tty)"; id -un'], {**live.c.env(), **ann.env}, ann.work, b"")
    assert (code, screen.replace("\r", "").splitlines()) == (0, [f"{ann.name} tty 620", ann.name]), screen


def test_each_user_reaches_only_what_they_may(live, users):
    """Two students and root's files: every attempt on someone else's folder or file fails, and
    nothing outside the submitting user's own folder is created or changed."""
    ann, bob = users
    root = live.work.parent
    for user in users:
        own = user.work / "own.txt"
        own.write_text(f"{user.name}'s notes\n")
        own.chmod(0o600)
        os.chown(own, user.uid, user.gid)

    def outside_ann() -> dict:
        seen = snapshot(root / "rootonly", root / "rootfile", live.work, bob.work,
                        top_only=(root, Path("/"), Path("/root")))
        seen.pop(str(ann.work))  # her own folder: her jobs write there
        return seen

    before = outside_ann()
    refused = [
        ("-o", str(bob.work / "x.out")), ("-o", str(root / "rootfile")), ("-o", "/root/x.out"),
        ("-o", str(root / "rootonly" / "x.out")), ("-o", str(root / "newdir" / "x.out")),
        ("-o", "/ms-created-by-a-job/x.out"), ("-e", str(bob.work / "x.err")),
        ("-i", str(bob.work / "own.txt")), ("-i", str(root / "rootonly" / "secret")), ("-i", "/etc/shadow"),
        ("-D", str(bob.work)),  # the default output, slurm-%j.out, would go to bob's folder
    ]
    for args in refused:
        job_id = submit(live, ann, *args, "--wrap", "cat; echo done")
        assert failed_at_launch(live, job_id), args
    # A folder the user may not enter: the job runs in /tmp, as in Slurm, and says so.
    for folder in (bob.work, root / "rootonly", Path("/root")):
        job_id = submit(live, ann, "-D", str(folder), "-o", str(ann.work / "cd-%j.out"), "--wrap", "pwd")
        assert live.wait(job_id)["state"] == "COMPLETED"
        assert (ann.work / f"cd-{job_id}.out").read_text() == (
            f"slurmstepd-gpu01: error: couldn't chdir to `{folder}': Permission denied: going to /tmp instead\n/tmp\n")
    assert outside_ann() == before
    # nor may bob's jobs reach ann's files; each user's own work goes as usual
    job_id = submit(live, bob, "-i", str(ann.work / "own.txt"), "--wrap", "cat")
    assert failed_at_launch(live, job_id)
    assert not list(bob.work.glob("slurm-*"))
    for user, umask, mode in ((ann, "0077", 0o600), (bob, "0022", 0o644)):  # sbatch exports its umask
        job_id = submit(live, user, "-i", "own.txt", "-o", "copy-%j.out", "--wrap", "cat; id -un",
                        env={"SLURM_UMASK": umask})
        assert live.wait(job_id)["state"] == "COMPLETED"
        out = user.work / f"copy-{job_id}.out"
        st = os.stat(out)
        assert out.read_text() == f"{user.name}'s notes\n{user.name}\n"
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (user.uid, user.gid, mode)
    assert (root / "rootonly" / "secret").read_text() == SECRET


def test_what_a_job_brings_never_drains_a_node(live):
    """A script that is not UTF-8 runs byte for byte; an environment too big to exec fails the
    job alone.  Neither is the node's fault, so neither may drain it (any student could
    otherwise take every node out of service)."""
    live.reset()
    script = live.work / "latin1.sh"
    script.write_bytes(b"#!/bin/sh\necho caf\xe9\n")
    job = live.sbatch("-o", "latin1-%j.out", str(script))
    assert live.wait(job)["state"] == "COMPLETED"
    assert (live.work / f"latin1-{job}.out").read_bytes() == b"caf\xe9\n"
    body = {"spec": {"time_limit_min": 5}, "script": "#!/bin/sh\ntrue\n", "batch": True, "work_dir": str(live.work),
            "environment": {f"BIG{i}": "x" * 120_000 for i in range(24)}}  # 2.9 MB: more than exec takes
    job = live.api.call("POST", "/jobs", body)["job_id"]
    done = live.wait(job)
    assert (done["state"], done["reason"]) == ("FAILED", "JobLaunchFailure")
    assert all(n["state"] == "idle" for n in live.api.call("GET", "/nodes")["nodes"])
