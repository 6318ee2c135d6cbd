"""JupyterHub as the class's front door, for real: ``cluster up --docker --hub`` and two students.

The instructor's roster gives alice and bob passwords (``cluster add-users --file
students.csv``); alice logs in with the form over HTTP, bob in headless Chromium.  Each one's
notebook server must be a Slurm job of their own (squeue's user, the server's uid on its node),
a cell in it submits a job to the cluster, neither reads the other's home, and stopping the
server ends its job.  Skipped without a Docker engine and root, as tests/docker/test_cluster.py
(MINISLURM_REQUIRE_DOCKER=1 makes that an error); the Chromium part skips without chromium and
playwright-core unless MINISLURM_REQUIRE_BROWSER=1.  One cluster of 2 nodes serves the module;
about 2 minutes on 2 cores once the image is built.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minislurm.cluster import compose, engine
from minislurm.cluster.docker import DockerCluster

sys.path.insert(0, str(Path(__file__).parent))
from hubkit import Student  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ROSTER = "user,password,email\nalice,correct horse,alice@example.org\nbob,battery staple,bob@example.org\n"
PASSWORDS = {"alice": "correct horse", "bob": "battery staple"}
ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT"}


def _why_skip() -> str | None:
    try:
        engine.check_engine()
        engine.compose_command()
    except engine.EngineError as exc:
        return str(exc)
    return None


REASON = _why_skip()
if REASON and os.environ.get("MINISLURM_REQUIRE_DOCKER") == "1":
    raise RuntimeError(f"MINISLURM_REQUIRE_DOCKER=1 but {REASON}")
pytestmark = [pytest.mark.daemons, pytest.mark.skipif(REASON is not None, reason=f"docker cluster: {REASON}")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(test, timeout: float, what: str, step: float = 0.25):
    deadline = time.time() + timeout
    while not (value := test()):
        assert time.time() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(step)
    return value


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    engine.ensure_image(compose.IMAGE)  # built already by tests/docker/test_cluster.py, unless stale
    folder = tmp_path_factory.mktemp("hub")
    c = DockerCluster(2, 8, 16, 32_000, dir=folder / "cluster", build=False, hub_port=free_port())
    try:
        c.up(timeout=120)
        # The instructor's command, with the instructor's CSV.
        (folder / "students.csv").write_text(ROSTER)
        cli = subprocess.run([str(Path(sys.executable).with_name("minislurm")), "cluster", "add-users", "--file",
                              str(folder / "students.csv"), "--dir", str(c.dir)], capture_output=True, text=True,
                             timeout=120)
        assert cli.returncode == 0, cli.stderr
        assert "alice" in cli.stdout and "a hub password" in cli.stdout
        yield c
    finally:
        c.save_logs(Path(os.environ.get("MINISLURM_ARTIFACTS", ROOT / "out")) / "hub-logs")
        c.down()


def jobs_of(c: DockerCluster, user: str) -> list[dict]:
    return [j for j in c.client().call("GET", "/jobs")["jobs"] if j["user"] == user]


def squeue(c: DockerCluster) -> list[list[str]]:
    """squeue on the login node as the instructor types it: job, user, name, state, node."""
    r = c.run("squeue", "-h", "-o", "%i %u %j %T %B", check=True)
    return [line.split() for line in r.stdout.splitlines()]


def server_uids(c: DockerCluster, node: str) -> list[int]:
    """The uids of the notebook servers running on ``node`` (read from /proc there, as root): the
    processes of ``python /opt/venv/bin/batchspawner-singleuser jupyterhub-singleuser``, not the
    ``srun`` that started them."""
    script = ("import os\nfor p in filter(str.isdigit, os.listdir('/proc')):\n"
              "    try:\n        argv = open(f'/proc/{p}/cmdline').read().split(chr(0))\n"
              "        status = open(f'/proc/{p}/status').read()\n    except OSError:\n        continue\n"
              "    if any(a.endswith('/batchspawner-singleuser') for a in argv):\n"
              "        print(status.split('Uid:')[1].split()[0])\n")
    r = subprocess.run(["docker", "exec", c.container(node), "python", "-c", script], capture_output=True, text=True,
                       timeout=60, check=True)
    return [int(u) for u in r.stdout.split()]


def test_a_wrong_password_and_a_stranger_are_refused(cluster):
    for name, password in (("alice", "battery staple"), ("alice", ""), ("student", "anything1"),
                           ("root", "correct horse")):
        s = Student(cluster.hub_url, name)
        r = s.login(password)
        assert r.status_code == 403 and "Invalid username or password" in r.text, (name, r.status_code)
        home = s.http.get(f"{cluster.hub_url}/hub/home", allow_redirects=False, timeout=30)
        assert home.status_code == 302 and "/hub/login" in home.headers["Location"]


@pytest.fixture(scope="module")
def alice(cluster):
    """alice logs in with the form and starts her server through the hub's REST API."""
    s = Student(cluster.hub_url, "alice")
    r = s.login(PASSWORDS["alice"])
    assert r.status_code == 302, r.text[-500:]
    s.get_token()
    assert s.api("GET", "/user").json()["name"] == "alice"
    assert s.start() in (201, 202)
    s.wait_ready()
    return s


@pytest.fixture(scope="module")
def bob(cluster, tmp_path_factory):
    """bob logs in in headless Chromium; the hub starts his server and shows him JupyterLab."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    node = shutil.which("node")
    missing = [why for ok, why in ((Path(chromium).exists(), "no chromium"), (node, "no node"),
                                   ((ROOT / "node_modules" / "playwright-core").is_dir(), "no playwright-core"))
               if not ok]
    if missing:
        if os.environ.get("MINISLURM_REQUIRE_BROWSER") == "1":
            pytest.fail(", ".join(missing))
        pytest.skip(", ".join(missing))
    shot = Path(os.environ.get("MINISLURM_ARTIFACTS", ROOT / "out" / "browser")) / "hub-bob.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    cfg = {"base": cluster.hub_url, "user": "bob", "password": PASSWORDS["bob"], "chromium": chromium,
           "shot": str(shot)}
    run = subprocess.run([node, str(Path(__file__).with_name("hub_login.mjs")), json.dumps(cfg)], capture_output=True,
                         text=True, timeout=360, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout)
    assert seen["url"].startswith(f"{cluster.hub_url}/user/bob/lab") and seen["errors"] == [], seen
    assert {"labs", "examples"} <= set(seen["listing"]), seen["listing"]  # his home, as add-users filled it
    assert shot.stat().st_size > 10_000
    s = Student(cluster.hub_url, "bob")
    s.use_cookies(seen["cookies"])
    s.get_token()
    assert s.server()["ready"]
    return s


def test_each_server_is_a_slurm_job_of_its_student_under_their_uid(cluster, alice, bob):
    rows = {row[1]: row for row in squeue(cluster) if row[2] == "spawner-jupyterhub"}
    assert set(rows) == {"alice", "bob"}, rows
    uids = {name: cluster.uid_of(name) for name in rows}
    for name, (_, _, _, state, node) in rows.items():
        assert state == "RUNNING" and node in cluster.node_names
        assert uids[name] in server_uids(cluster, node)
    # no other server runs anywhere, and none as root
    seen = [uid for node in {row[4] for row in rows.values()} for uid in server_uids(cluster, node)]
    assert sorted(seen) == sorted(uids.values())


CELL = "!sbatch --parsable -o from-the-lab.out --wrap 'id -un; hostname'"


@pytest.mark.parametrize("name", ["alice", "bob"])
def test_a_cell_submits_a_job_that_runs_as_its_student(cluster, alice, bob, name):
    s = {"alice": alice, "bob": bob}[name]
    out, error = s.run_cell(CELL)
    assert error is None, (out, error)
    job_id = int(out.strip().splitlines()[-1])
    job = until(lambda: (j := cluster.client().call("GET", f"/jobs/{job_id}"))["state"] in ENDED and j, 120,
                f"{name}'s job {job_id} to end")
    assert job["user"] == name and job["state"] == "COMPLETED", job
    # It ran as them on a node; its output is in their home, theirs.
    out, error = s.run_cell("print(open('from-the-lab.out').read()); import os; print(os.stat('from-the-lab.out').st_uid)")
    assert error is None, error
    lines = out.split()
    assert lines[0] == name and lines[1] in cluster.node_names and int(lines[2]) == cluster.uid_of(name)


def test_a_lab_runs_in_the_session(alice):
    """Lab 1's live-cluster cell, from alice's own copy of the lab (the server's contents API reads
    her home): it starts its small cluster inside her job and submits a job there."""
    lab = alice.user_api("GET", "/contents/labs/01-cluster-basics.ipynb").json()
    cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
             for c in lab["content"]["cells"] if c["cell_type"] == "code"]
    setup = next(c for c in cells if c.startswith("# Setup"))
    live = next(c for c in cells if c.startswith("with lab_cluster(") and "sh.submit(" in c)
    out, error = alice.run_cell(setup + "\n" + live, timeout=240)
    assert error is None, (out[-2000:], error)
    assert "$ sinfo" in out and "GPUs 0,1 on gpu0" in out, out[-2000:]


def test_neither_student_reads_the_others_home(alice, bob):
    for s, other in ((alice, "bob"), (bob, "alice")):
        out, error = s.run_cell(f"import os\nos.listdir('/home/{other}')")
        assert error == {"ename": "PermissionError", "evalue": f"[Errno 13] Permission denied: '/home/{other}'"}
        out, error = s.run_cell(f"open('/home/{other}/jupyterhub_slurmspawner_1.log')")
        assert error and error["ename"] == "PermissionError"
    # and each reads their own
    out, error = alice.run_cell("import os\nprint(sorted(os.listdir(os.path.expanduser('~'))))")
    assert error is None and "labs" in out and "from-the-lab.out" in out


def test_stopping_the_server_ends_its_job(cluster, alice, bob):
    job_id, _, _, _, node = next(row for row in squeue(cluster) if row[1] == "alice")
    alice.stop()
    job = until(lambda: (j := cluster.client().call("GET", f"/jobs/{job_id}"))["state"] in ENDED and j, 60,
                f"alice's server job {job_id} to end")
    assert job["state"] == "CANCELLED", job
    assert [row for row in squeue(cluster) if row[1] == "alice"] == []
    until(lambda: cluster.uid_of("alice") not in server_uids(cluster, node), 30, "alice's server to exit")
    assert bob.server()["ready"] and [row[1] for row in squeue(cluster)] == ["bob"]  # bob's goes on
