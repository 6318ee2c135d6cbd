"""minislurm's docker cluster, for real: the image, the containers, jobs across them, failures.

Skipped unless a Docker engine answers, as root, with docker compose (v2 or Debian's 1.29);
with ``MINISLURM_REQUIRE_DOCKER=1`` (``.ci/run`` sets it once it has started an engine) a
missing engine is an error instead.
The image is (re)built first, from the sources under test: a no-op but for the last layers
when only minislurm changed.  One cluster of 2 nodes x 8 GPUs serves the module; a failing
test leaves it as the next test needs it (nodes booted, back on the network).  About 4
minutes on 2 cores.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from minislurm.cluster import engine
from minislurm.cluster.docker import DockerCluster
from minislurm.cluster.project import LABEL

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "docker" / "minislurm" / "build.sh"
IMAGE = "minislurm-cluster:latest"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}
TRAIN = ["--steps", "60", "--ckpt-every", "20", "--step-time", "0.05"]


def _why_skip() -> str | None:
    try:
        engine.check_engine()
        engine.compose_command()
    except engine.EngineError as exc:
        return str(exc)
    return None


REASON = _why_skip()
if REASON and os.environ.get("MINISLURM_REQUIRE_DOCKER") == "1":  # .ci/run started an engine
    raise RuntimeError(f"MINISLURM_REQUIRE_DOCKER=1 but {REASON}")
pytestmark = [pytest.mark.daemons, pytest.mark.skipif(REASON is not None, reason=f"docker cluster: {REASON}")]


def leftovers(project: str) -> list[str]:
    """What Docker still holds of a cluster: containers, networks, volumes."""
    found = []
    for listing in (["ps", "-aq"], ["network", "ls", "-q"], ["volume", "ls", "-q"]):
        found += engine.docker(*listing, "--filter", f"label={LABEL}={project}").stdout.split()
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Build the image as `make cluster-image` does, recording every docker command it runs."""
    spy = tmp_path_factory.mktemp("spy")
    real = shutil.which("docker")
    (spy / "docker").write_text(f'#!/bin/sh\necho "$*" >> {spy}/calls\nexec {real} "$@"\n')
    (spy / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{spy}:{os.environ['PATH']}", "PY": sys.executable, "IMAGE": IMAGE}
    started = time.time()
    r = subprocess.run(["sh", str(BUILD), "-q"], env=env, capture_output=True, text=True, timeout=1200)
    return r, (spy / "calls").read_text().splitlines() if (spy / "calls").exists() else [], time.time() - started


@pytest.fixture(scope="module")
def cluster(built, tmp_path_factory):
    assert built[0].returncode == 0, built[0].stderr[-2000:]
    c = DockerCluster(2, 8, 16, 32_000, dir=tmp_path_factory.mktemp("docker") / "cluster", build=False)
    try:
        c.up(timeout=120)
        yield c
    finally:
        c.down()
        assert not leftovers(c.project), "down() left containers, networks or volumes behind"


def sbatch(c: DockerCluster, *argv: str, cwd: Path, user: str | None = None) -> int:
    r = c.run("sbatch", *argv, cwd=str(cwd), user=user)
    m = re.fullmatch(r"Submitted batch job (\d+)\n", r.stdout)
    assert r.returncode == 0 and m, (r.returncode, r.stdout, r.stderr)
    return int(m.group(1))


def until(test, timeout: float, what: str, step: float = 0.1):
    deadline = time.time() + timeout
    while True:
        value = test()
        if value:
            return value
        assert time.time() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(step)


def job(c: DockerCluster, job_id: int) -> dict:
    return c.client().call("GET", f"/jobs/{job_id}")


def node(c: DockerCluster, name: str) -> dict:
    return next(n for n in c.client().call("GET", "/nodes")["nodes"] if n["name"] == name)


def finished(c: DockerCluster, job_id: int, timeout: float = 180) -> dict:
    return until(lambda: (j := job(c, job_id))["state"] in TERMINAL and j, timeout, f"job {job_id} to end")


@pytest.fixture
def healthy(cluster):
    """Every node booted, on the network and idle after the test, whatever it did."""
    yield cluster
    for name in cluster.node_names:
        state = engine.docker("inspect", "-f", "{{.State.Running}}", cluster.container(name)).stdout.strip()
        if state != "true":
            cluster.start_node(name)
        nets = engine.docker("inspect", "-f", "{{json .NetworkSettings.Networks}}", cluster.container(name)).stdout
        if cluster.network not in nets:
            cluster.heal(name)
    for j in cluster.client().call("GET", "/jobs")["jobs"]:
        if j["state"] not in TERMINAL:
            cluster.client().call("POST", f"/jobs/{j['job_id']}/cancel", {"uid": 0})
    cluster.wait_nodes(60)


# -- the image and the containers ------------------------------------------------------------------
def test_image_builds_offline(built):
    r, calls, seconds = built
    assert r.returncode == 0, r.stderr[-2000:]
    builds = [c for c in calls if c.startswith("build ")]
    assert builds and all("--network none" in c for c in builds), builds
    assert not [c for c in calls if c.startswith(("pull", "login", "push"))]  # no registry
    assert engine.image_exists(IMAGE)
    print(f"image build: {seconds:.1f} s")


def test_nodes_are_hosts_of_their_own(cluster):
    r = cluster.run("srun", "-N2", "--ntasks-per-node=1", "bash", "-c", 'echo "$(hostname) $(hostname -i)"')
    assert r.returncode == 0, r.stderr
    seen = dict(sorted(line.split() for line in r.stdout.splitlines()))
    assert list(seen) == ["gpu01", "gpu02"] and len(set(seen.values())) == 2
    for name, addr in seen.items():  # each node's own address on the cluster's network
        ip = engine.docker("inspect", "-f", f'{{{{(index .NetworkSettings.Networks "{cluster.network}").IPAddress}}}}',
                           cluster.container(name)).stdout.strip()
        assert addr == ip
    # Own file systems, one shared /home.
    assert cluster.run("srun", "-w", "gpu01", "touch", "/tmp/only-on-gpu01", "here").returncode == 0
    assert cluster.run("srun", "-w", "gpu02", "test", "-e", "/tmp/only-on-gpu01").returncode == 1
    assert cluster.run("srun", "-w", "gpu02", "test", "-e", "here").returncode == 0
    assert cluster.run("hostname").stdout == "login\n"


def test_sinfo_on_the_login_node(cluster):
    r = cluster.run("sinfo")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == ("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
                        "gpu*         up   infinite      2   idle gpu[01-02]\n")
    assert cluster.run("sinfo", "-N", "-h", "-o", "%N %c %G").stdout == "gpu01 16 gpu:8\ngpu02 16 gpu:8\n"


def test_every_command_of_a_local_cluster_is_on_the_login_node(cluster):
    """The image installs the one list of commands a local cluster's bin/ has (salloc, sstat,
    seff and jobstats were missing from the image's own copy)."""
    from minislurm.cluster.base import COMMANDS

    for name in COMMANDS:
        r = cluster.run(name, "-V")
        assert r.returncode == 0 and r.stdout.split()[0] in ("slurm", name), (name, r)  # seff, jobstats: theirs


# -- users -----------------------------------------------------------------------------------
def test_students_submit_as_themselves_with_one_uid_everywhere(cluster):
    added, errors = cluster.add_users("alice", "bob")
    assert not errors and [(n, what) for n, _, what in added] in (
        [("alice", "added"), ("bob", "added")], [("alice", "exists"), ("bob", "exists")])
    uid = dict((n, u) for n, u, _ in added)
    work = {}
    for name in ("alice", "bob"):
        work[name] = cluster.home / name
        job_id = sbatch(cluster, "-N2", "--wrap", "srun id -u; srun hostname", cwd=work[name], user=name)
        assert finished(cluster, job_id)["state"] == "COMPLETED"
        out = (work[name] / f"slurm-{job_id}.out").read_text().split()
        assert out.count(str(uid[name])) == 2 and {"gpu01", "gpu02"} <= set(out)
        assert os.stat(work[name] / f"slurm-{job_id}.out").st_uid == uid[name]
    # Tokens and homes are private.
    r = cluster.run("cat", "/etc/slurm/tokens/alice", user="bob")
    assert r.returncode == 1 and "Permission denied" in r.stderr
    assert cluster.run("ls", "/home/alice", user="bob").returncode != 0
    # bob's jobs are bob's: alice may not cancel them.
    job_id = sbatch(cluster, "--hold", "--wrap", "true", cwd=work["bob"], user="bob")
    r = cluster.run("scancel", str(job_id), user="alice")
    assert r.returncode == 1 and "Access/permission denied" in r.stderr
    assert cluster.run("scancel", str(job_id), user="bob").returncode == 0


def test_the_instructor_is_an_operator_and_fair_share_is_per_student(cluster, healthy):
    """After students alice and bob (above): an instructor who may act on every job, and a
    student who used more of the cluster has the lower fair-share factor."""
    added, errors = cluster.add_users("teacher", operator=True)
    assert not errors and added[0][0] == "teacher"
    accounts = cluster.run("cat", "/etc/slurm/accounts.conf").stdout.splitlines()
    assert "User=teacher Account=default Fairshare=1 AdminLevel=Operator" in accounts
    assert "User=alice Account=default Fairshare=1" in accounts
    held = sbatch(cluster, "--hold", "--wrap", "true", cwd=cluster.home / "alice", user="alice")
    assert cluster.run("scancel", str(held), user="teacher").returncode == 0
    assert finished(cluster, held)["state"] == "CANCELLED"
    # alice keeps 16 CPUs busy for 3 s; bob runs a moment on one.
    heavy = sbatch(cluster, "-n16", "--wrap", "sleep 3", cwd=cluster.home / "alice", user="alice")
    light = sbatch(cluster, "--wrap", "true", cwd=cluster.home / "bob", user="bob")
    assert finished(cluster, heavy)["state"] == finished(cluster, light)["state"] == "COMPLETED"
    header, *rows = cluster.run("sshare", "-a", "-P").stdout.splitlines()
    col = header.split("|")
    factor = {r.split("|")[col.index("User")]: float(r.split("|")[col.index("FairShare")])
              for r in rows if r.split("|")[col.index("User")] in ("alice", "bob")}
    assert factor["alice"] < factor["bob"], rows


# -- training across containers, and a crash -------------------------------------------------------
@pytest.fixture(scope="module")
def ddp(cluster):
    """examples/ddp in the lab user's folder, and an uninterrupted 2 x 4-rank run for reference."""
    work = cluster.workdir("ddp")
    cluster.put(ROOT / "examples" / "ddp", work)
    ref = sbatch(cluster, "train.sbatch", *TRAIN, "--final", "reference.pt", cwd=work)
    assert finished(cluster, ref, 300)["state"] == "COMPLETED", (work / f"ddp-{ref}.out").read_text()
    return work, ref


def same_weights(a: Path, b: Path) -> bool:
    torch = pytest.importorskip("torch")
    x, y = torch.load(a, weights_only=True), torch.load(b, weights_only=True)
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


def test_ddp_across_two_containers(cluster, ddp):
    work, ref = ddp
    log = (work / f"ddp-{ref}.out").read_text()
    assert log.startswith(f"=== job {ref}, restart 0, on gpu[01-02] ===\n")
    assert f"job {ref} restart 0: starting at step 0 on 8 ranks" in log and "done: 60 steps" in log


def test_docker_kill_mid_run_requeues_and_resumes_exactly(cluster, ddp, healthy):
    work, _ = ddp
    # Slower steps than the reference's (the weights are the same): 10 s left after the first
    # checkpoint, so that the crash comes mid-run however long a loaded host takes to notice it.
    slow = [*TRAIN[:-1], "0.25"]
    job_id = sbatch(cluster, "train.sbatch", *slow, "--final", "resumed.pt", cwd=work)
    log = work / f"ddp-{job_id}.out"
    until(lambda: log.exists() and "step 20:" in log.read_text(), 180, "the first checkpoint")
    cluster.kill_node("gpu02")
    killed = time.time()  # gpu02's agent answers nothing after this
    gone = until(lambda: (n := node(cluster, "gpu02"))["state"].startswith("down") and n, 60, "gpu02 DOWN")
    assert "done:" not in log.read_text(), "the run ended before the crash"
    # When the controller marked it DOWN, by its own clock (the host's, in a container): the
    # promise is SlurmdTimeout after the last answer, which came before the kill.
    down = gone["reason_time"] - killed
    timeout = cluster.config.slurmd_timeout
    assert gone["reason"] == "Not responding"
    assert down <= timeout + 1, f"DOWN {down:.1f} s after the crash (SlurmdTimeout {timeout})"
    # Requeued, and pending: it needs both nodes.
    until(lambda: (j := job(cluster, job_id))["restart_count"] == 1 and j["state"] == "PENDING", 60,
          "the requeue")
    cluster.start_node("gpu02")
    assert finished(cluster, job_id, 300)["state"] == "COMPLETED"
    text = log.read_text()
    saved = re.findall(r"^restart 0 \| step (\d+): .*checkpoint written", text, re.MULTILINE)  # before the crash
    assert f"job {job_id} restart 1: resuming at step {saved[-1]} (checkpoint of restart 0)" in text
    assert same_weights(work / "reference.pt", work / "resumed.pt")
    acct = cluster.run("sacct", "-D", "-X", "-n", "-P", "-o", "JobID,State", "-j", str(job_id)).stdout
    assert acct == f"{job_id}|NODE_FAIL\n{job_id}|COMPLETED\n"
    print(f"crash -> DOWN: {down:.2f} s (SlurmdTimeout {timeout})")


def test_eight_ranks_on_one_eight_gpu_node(cluster, ddp):
    """The AI-cluster shape: one node, 8 GPUs, one rank per GPU (srun from the login node)."""
    work, _ = ddp
    r = cluster.run("srun", "-N1", "--ntasks-per-node=8", "--gres=gpu:8", "bash", "-c",
                    'echo "$SLURM_PROCID $SLURM_LOCALID $(hostname) $CUDA_VISIBLE_DEVICES"', cwd=str(work))
    assert r.returncode == 0, r.stderr
    rows = sorted(tuple(line.split()) for line in r.stdout.splitlines())
    host = rows[0][2]
    assert rows == [(str(i), str(i), host, "0,1,2,3,4,5,6,7") for i in range(8)]
    r = cluster.run("srun", "-N1", "--ntasks-per-node=8", "--gres=gpu:8", "python", "train_ddp.py", *TRAIN,
                    "--ckpt-dir", "ckpt-one-node", "--final", "one-node.pt", cwd=str(work), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "starting at step 0 on 8 ranks" in r.stdout and "done: 60 steps" in r.stdout
    # 8 ranks on one node compute what 8 ranks on two nodes do, bit for bit.
    assert same_weights(work / "reference.pt", work / "one-node.pt")


# -- the login node, typed at -------------------------------------------------------------------
class Terminal:
    """A command on a pseudo-terminal of its own, as a person at a keyboard runs it: what is
    typed reaches it through the terminal, and the screen (echo, prompts) is read back."""

    CONTROL = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")  # colours, bracketed paste, CR

    def __init__(self, *argv: str):
        self.fd, tty = os.openpty()
        fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))  # no line wraps
        self.proc = subprocess.Popen(argv, stdin=tty, stdout=tty, stderr=tty, start_new_session=True,
                                     env={**os.environ, "TERM": "xterm"})
        os.close(tty)
        self.screen, self.pos = b"", 0

    @property
    def text(self) -> str:
        return self.CONTROL.sub(b"", self.screen).decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")  # Enter

    def expect(self, pattern: str, timeout: float) -> re.Match:
        """The first match of ``pattern`` (a line-wise regex) after the last one, waiting for it."""
        deadline = time.monotonic() + timeout
        while not (m := re.compile(pattern, re.MULTILINE).search(self.text, self.pos)):
            left = deadline - time.monotonic()
            assert left > 0, f"timed out after {timeout} s waiting for {pattern!r}; the screen:\n{self.text[-4000:]}"
            if select.select([self.fd], [], [], min(left, 0.5))[0]:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # EIO: the command has gone
                    chunk = b""
                assert chunk, f"the terminal closed waiting for {pattern!r}; the screen:\n{self.text[-4000:]}"
                self.screen += chunk
        self.pos = m.end()
        return m

    def ready(self, prompt: str, timeout: float = 60) -> None:
        """Wait until the shell takes what is typed: the answer to a first line, and the prompt
        after it (bash draws its first prompt again when docker exec sets the terminal's size)."""
        self.type('echo "ready $((6 * 7))"')
        # Not anchored at the line's start: typed before bash reads the terminal, the line is
        # echoed by the terminal itself and its Enter as a carriage return alone (seen in CI).
        self.expect(r"ready 42$", timeout)
        self.expect(prompt, 30)

    def run(self, line: str, prompt: str, timeout: float = 60) -> tuple[str, int]:
        """Type ``line`` at a prompt, wait for the next prompt, then ask the shell for the exit
        status: the screen in between (the line's echo, then what it printed), and the status."""
        start = self.pos
        self.type(line)
        while (end := self.expect(prompt, timeout).start()) == start:  # drawn again, before the echo
            start = self.pos
        printed = self.text[start:end]
        self.type('echo "exit $?"')
        code = int(self.expect(r"^exit (\d+)$", 30).group(1))
        self.expect(prompt, 30)
        return printed, code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        os.close(self.fd)


def prompt(user: str) -> str:
    """bash's prompt on the login node (Debian's), the end of what the screen shows."""
    return rf"{user}@login:[^\n]*[$#] \Z"


def cluster_shell(c: DockerCluster, *argv: str) -> Terminal:
    return Terminal(sys.executable, "-m", "minislurm.cli.main", "cluster", "shell", "--dir", str(c.dir), *argv)


def test_the_readmes_login_node_lines_typed_into_cluster_shell(cluster, healthy):
    """README "On containers": `minislurm cluster shell` is a login shell (bash -l, whose
    /etc/profile sets PATH anew); the README's lines typed there run the image's Python, in the
    step and in the batch job (which gets the login shell's PATH).  Before: `execve(): python:
    No such file or directory`, once per task."""
    t = cluster_shell(cluster)
    me = prompt("student")
    try:
        t.ready(me)
        printed, code = t.run('shopt -q login_shell && echo "a login shell, $(command -v python)"', me)
        assert code == 0 and "a login shell, /opt/venv/bin/python\n" in printed, t.text
        printed, code = t.run("srun -N1 --ntasks-per-node=8 --gres=gpu:8 python ~/examples/ddp/train_ddp.py", me,
                              timeout=600)
        assert code == 0 and "starting at step 0 on 8 ranks" in printed and "done: 200 steps" in printed, t.text
        printed, code = t.run("cd ~/examples/ddp && sbatch train.sbatch && squeue", me)
        assert code == 0, t.text
        job_id = int(re.search(r"^Submitted batch job (\d+)$", printed, re.MULTILINE).group(1))
        assert re.search(rf"^ +{job_id} +gpu +ddp +student ", printed, re.MULTILINE), t.text
        t.type("exit")
        assert t.proc.wait(30) == 0
    finally:
        t.close()
    state = finished(cluster, job_id, 600)["state"]
    log = (cluster.home / "student" / "examples" / "ddp" / f"ddp-{job_id}.out").read_text()
    assert state == "COMPLETED" and "done: 200 steps" in log, log[-3000:]


def test_the_image_python_in_every_other_shell(cluster):
    """root's login shell, `su -` to a student and to root, and a shell that is not a login one."""
    where = 'python -c "import sys, torch; print(sys.prefix)"'
    t = cluster_shell(cluster, "--user", "root")
    root = prompt("root")
    try:
        t.ready(root)
        for line in (where, f"su - student -c '{where}'", f"su - -c '{where}'"):
            printed, code = t.run(line, root)
            assert (code, printed.splitlines()[-1]) == (0, "/opt/venv"), t.text
    finally:
        t.close()
    r = cluster.run("bash", "-c", where)
    assert (r.returncode, r.stdout) == (0, "/opt/venv\n"), r.stderr


# -- more failures ----------------------------------------------------------------------------
def test_partition_then_the_stale_run_is_fenced(cluster, healthy):
    work = cluster.workdir("fence")
    job_id = sbatch(cluster, "--requeue", "-o", "beat-%j-%r.out", "--wrap",
                    "while true; do date +%s.%N; sleep 0.2; done", cwd=work)
    until(lambda: job(cluster, job_id)["state"] == "RUNNING", 60, "the job to start")
    first = job(cluster, job_id)["nodes"]
    other = "gpu02" if first == "gpu01" else "gpu01"
    beat0 = work / f"beat-{job_id}-0.out"
    until(lambda: beat0.exists() and beat0.read_text().count("\n") > 2, 30, "the first run's heartbeat")
    cluster.partition(first)
    until(lambda: node(cluster, first)["state"].startswith("down"), 30, f"{first} DOWN")
    until(lambda: (j := job(cluster, job_id))["restart_count"] == 1 and j["state"] == "RUNNING", 60, "the rerun")
    assert job(cluster, job_id)["nodes"] == other
    # Cut off, the first run goes on: its heartbeat still grows (the node's own clock).
    size = beat0.stat().st_size
    until(lambda: beat0.stat().st_size > size, 10, "the stale run to go on while cut off")
    cluster.heal(first)
    until(lambda: not node(cluster, first)["state"].startswith("down"), 30, f"{first} back")
    time.sleep(2)
    size = beat0.stat().st_size
    time.sleep(1.5)
    assert beat0.stat().st_size == size, "the stale run was not fenced"
    beat1 = work / f"beat-{job_id}-1.out"
    size = beat1.stat().st_size
    until(lambda: beat1.stat().st_size > size, 10, "the current run to go on")
    assert cluster.run("scancel", str(job_id)).returncode == 0


def test_clean_shutdown_and_reboot_return_the_node(cluster, healthy):
    cluster.stop_node("gpu01")  # docker stop: the agent is told to stop
    until(lambda: node(cluster, "gpu01")["state"].startswith("down"), 30, "gpu01 DOWN")
    assert node(cluster, "gpu01")["reason"] == "Not responding"
    cluster.start_node("gpu01")
    until(lambda: node(cluster, "gpu01")["state"] == "idle", 30, "gpu01 back (ReturnToService)")
    boot = node(cluster, "gpu02")["slurmd_start_time"]
    cluster.reboot_node("gpu02")  # docker restart
    until(lambda: node(cluster, "gpu02")["state"] == "idle" and node(cluster, "gpu02")["slurmd_start_time"] != boot,
          30, "gpu02 rebooted and idle")


def test_a_failed_start_removes_only_what_it_made(cluster, tmp_path):
    fresh = DockerCluster(1, 2, 4, 8000, dir=tmp_path / "fresh", build=False)
    with pytest.raises(TimeoutError):
        fresh.up(timeout=0)  # gives up at once, after `compose up` made it all
    assert not leftovers(fresh.project)
    again = DockerCluster(2, 8, 16, 32_000, dir=cluster.dir, build=False)  # the running cluster
    with pytest.raises(TimeoutError):
        again.up(timeout=0)
    assert len(cluster.running()) == 4 and cluster.run("sinfo", "-h", "-o", "%D %t").stdout == "2 idle\n"


# -- GPU mode and the command line --------------------------------------------------------------
def test_gpu_mode_without_gpus_drains_the_node_with_slurms_message(built, tmp_path):
    c = DockerCluster(1, 2, 4, 8000, dir=tmp_path / "gpu", build=False, gpus_from="nvidia-smi")
    try:
        c.up(timeout=120, idle=False)
        n = node(c, "gpu01")
        assert n["state"] == "drain" or "DRAIN" in n["flags"], n
        assert n["reason"] == "gres/gpu count reported lower than configured (0 < 2)"
    finally:
        c.down()
    assert not leftovers(c.project)


def test_cluster_up_env_shell_and_down_from_the_command_line(built, tmp_path):
    folder = tmp_path / "cli"
    minislurm = [sys.executable, "-m", "minislurm.cli.main"]
    started = time.time()
    r = subprocess.run([*minislurm, "cluster", "up", "--docker", "--nodes", "4", "--gpus-per-node", "8",
                        "--dir", str(folder)], capture_output=True, text=True, timeout=300)
    seconds = time.time() - started
    try:
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("minislurm docker cluster is up: a docker cluster: 4 nodes x 8 GPUs")
        env = subprocess.run([*minislurm, "env", "--docker", "--dir", str(folder)], capture_output=True, text=True)
        assert env.returncode == 0 and env.stdout == f"export PATH={folder}/bin:\"$PATH\"\n"
        shell = subprocess.run(["sh", "-c", f"{env.stdout}cd /tmp && sinfo -h && squeue -h | wc -l"],
                               capture_output=True, text=True, timeout=60)
        assert shell.stdout == "gpu*         up   infinite      4   idle gpu[01-04]\n0\n", shell.stderr
        who = subprocess.run([*minislurm, "cluster", "shell", "--dir", str(folder), "--", "bash", "-c",
                              'echo "$(whoami) $(hostname) $PWD"'], capture_output=True, text=True, timeout=60)
        assert who.stdout == "student login /home/student\n", who.stderr
        status = subprocess.run([*minislurm, "cluster", "status", "--docker", "--dir", str(folder)],
                                capture_output=True, text=True)
        assert status.returncode == 0 and len(status.stdout.splitlines()) == 6
        again = subprocess.run([*minislurm, "cluster", "up", "--docker", "--nodes", "2", "--dir", str(folder)],
                               capture_output=True, text=True)
        assert again.returncode == 1 and "holds a docker cluster already and it has --nodes 4" in again.stderr
    finally:
        down = subprocess.run([*minislurm, "cluster", "down", "--docker", "--dir", str(folder)],
                              capture_output=True, text=True, timeout=120)
    assert down.returncode == 0 and down.stdout.startswith("minislurm docker cluster is down")
    assert not leftovers(DockerCluster(dir=folder).project)
    print(f"cluster up --docker, 4 nodes x 8 GPUs, from a built image to all idle: {seconds:.1f} s")


# -- the same compose file as a Swarm stack ------------------------------------------------------
def _swarm_state() -> str:
    return engine.docker("info", "--format", "{{.Swarm.LocalNodeState}}").stdout.strip()


def test_the_compose_file_deploys_as_a_swarm_stack(built, tmp_path):
    """One host made a swarm of one, when swarm mode starts here (and no swarm is running that
    is not ours to touch); left as it was found."""
    from minislurm.cluster.compose import Shape, compose_yaml
    if _swarm_state() != "inactive":
        pytest.skip(f"this engine's swarm is {_swarm_state()}: not ours to change")
    networks_before = set(engine.docker("network", "ls", "--format", "{{.Name}}").stdout.split())
    init = engine.docker("swarm", "init", "--advertise-addr", "127.0.0.1", check=False)
    if init.returncode:
        pytest.skip(f"swarm mode does not start here: {init.stderr.strip()}")
    stack = f"msd-swarm-{os.getpid()}"
    (tmp_path / "compose.yaml").write_text(compose_yaml(Shape(nodes=2)))
    env = {**os.environ, "GPUS_PER_NODE": "4", "CPUS_PER_NODE": "4", "MEM_PER_NODE": "8000"}  # no .env: the shell's
    try:
        r = subprocess.run(["docker", "stack", "deploy", "-c", str(tmp_path / "compose.yaml"), stack], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr

        def login() -> str:
            return engine.docker("ps", "-q", "--filter", f"label=com.docker.swarm.service.name={stack}_login").stdout.strip()

        def sh(command: str, cwd: str = "/home/student") -> subprocess.CompletedProcess:
            return subprocess.run(["docker", "exec", "-u", "1000:1000", "-e", "HOME=/home/student", "-w", cwd, login(),
                                   "bash", "-c", command], capture_output=True, text=True, timeout=120)
        until(lambda: login() and sh("sinfo -h -o '%D %t'").stdout == "2 idle\n", 120, "the stack's nodes idle",
              step=0.5)
        assert sorted(sh("srun -N2 hostname").stdout.split()) == ["gpu01", "gpu02"]
        r = sh("srun -N2 --ntasks-per-node=2 --gres=gpu:2 python train_ddp.py --steps 5 --ckpt-every 5",
               cwd="/home/student/examples/ddp")
        assert r.returncode == 0 and "done: 5 steps" in r.stdout, r.stdout + r.stderr
        assert sh("sinfo -h -N -o '%N %c %G'").stdout == "gpu01 4 gpu:4\ngpu02 4 gpu:4\n"
    finally:
        engine.docker("stack", "rm", stack, check=False)
        until(lambda: not engine.docker("ps", "-aq", "--filter", f"label=com.docker.stack.namespace={stack}").stdout
              .strip(), 60, "the stack's containers to go")
        volumes = engine.docker("volume", "ls", "-q", "--filter", f"label=com.docker.stack.namespace={stack}").stdout
        until(lambda: engine.docker("volume", "rm", *volumes.split(), check=False).returncode == 0
              if volumes.split() else True, 30, "the stack's volumes to be removed")
        engine.docker("swarm", "leave", "--force", check=False)
        if "docker_gwbridge" not in networks_before:
            engine.docker("network", "rm", "docker_gwbridge", check=False)
