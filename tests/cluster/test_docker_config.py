"""The docker cluster's files and checks, without an engine: the compose files, the slurm.conf the
controller writes from .env, the users' passwd and group, and every refusal before a container
starts (fake ``docker``, ``docker-compose`` and ``nvidia-smi`` commands stand in for the real ones)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from minislurm.cli.main import main
from minislurm.cluster import compose, engine, users
from minislurm.cluster.container import render_conf
from minislurm.cluster.docker import DockerCluster, project_name
from minislurm.core.slurmconf import parse_slurm_conf

DOCKER = Path(__file__).resolve().parents[2] / "docker"
WHY = " (python -m minislurm.cluster.compose)"


# -- the compose files ------------------------------------------------------------------------
def test_committed_files_are_the_default_rendering():
    """docker/compose.yaml, compose.gpu.yaml and .env are what the renderer writes for 4 x 8 GPUs
    (`python -m minislurm.cluster.compose` rewrites them): one source, no drift."""
    shape = compose.Shape()
    assert (shape.nodes, shape.gpus_per_node) == (4, 8)
    assert (DOCKER / "compose.yaml").read_text() == compose.compose_yaml(shape, WHY)
    assert (DOCKER / "compose.gpu.yaml").read_text() == compose.gpu_override(shape, WHY)
    assert (DOCKER / ".env").read_text() == compose.env_file(shape)


def test_one_service_per_node_each_with_its_host_name():
    doc = yaml.safe_load(compose.compose_yaml(compose.Shape(nodes=3)))
    services = doc["services"]
    assert list(services) == ["ctld", "gpu01", "gpu02", "gpu03", "login"]
    for name, svc in services.items():
        assert svc["hostname"] == name and svc["networks"] == ["cluster"]
        assert svc["container_name"] == f"${{COMPOSE_PROJECT_NAME:-minislurm}}-{name}"
        assert "${HOME_VOLUME:-home}:/home" in svc["volumes"]  # one /home for all
        assert svc["healthcheck"]["test"][:3] == ["CMD", "bash", "-c"]
    assert services["ctld"]["command"] == ["controller"] and services["login"]["command"] == ["login"]
    assert services["gpu02"]["command"] == ["node"] and services["gpu02"]["depends_on"] == ["ctld"]
    # Only the controller writes the shared configuration and users.
    assert "etc:/etc/slurm" in services["ctld"]["volumes"] and "etc:/etc/slurm:ro" in services["gpu01"]["volumes"]
    assert "users:/var/lib/extrausers:ro" in services["login"]["volumes"]
    assert services["ctld"]["environment"]["NODE_NAMES"] == "gpu[01-03]"
    assert "ports" not in services["login"]  # nothing published unless asked: no port to clash
    assert set(doc["volumes"]) == {"etc", "users", "state", "home"} and set(doc["networks"]) == {"cluster"}


def test_jupyter_port_is_published_on_loopback_only_when_asked():
    doc = yaml.safe_load(compose.compose_yaml(compose.Shape(nodes=1, jupyter_port=8899)))
    login = doc["services"]["login"]
    assert login["ports"] == ["127.0.0.1:${JUPYTER_PORT}:8888"] and login["environment"]["JUPYTER"] == "1"
    assert "JUPYTER_PORT=8899" in compose.env_file(compose.Shape(jupyter_port=8899)).splitlines()


def test_gpu_override_gives_each_node_its_own_devices():
    doc = yaml.safe_load(compose.gpu_override(compose.Shape(nodes=3, gpus_per_node=2)))
    seen = []
    for name in ("gpu01", "gpu02", "gpu03"):
        svc = doc["services"][name]
        assert svc["environment"]["GPUS_FROM"] == "nvidia-smi"
        (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
        seen.append(device["device_ids"])
    assert seen == [["0", "1"], ["2", "3"], ["4", "5"]]


@pytest.mark.parametrize("nodes", [0, -2])
def test_a_cluster_of_no_nodes_is_refused_before_anything_is_written(tmp_path, nodes):
    with pytest.raises(ValueError, match=f"--nodes must be at least 1, not {nodes}"):
        DockerCluster(nodes, dir=tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_project_names_differ_per_folder_and_never_look_like_the_twin(tmp_path):
    a, b = project_name(tmp_path / "a"), project_name(tmp_path / "b")
    assert a != b and a.startswith("msd-") and b.startswith("msd-")
    c = DockerCluster(2, 4, dir=tmp_path / "a")
    assert c.container("gpu01") == f"{a}-gpu01" and c.network == f"{a}_cluster"
    assert not c.container("ctld").startswith("minislurm-")  # the twin's are minislurm-c1, ...


# -- the controller's slurm.conf ---------------------------------------------------------------
def test_controller_writes_slurm_conf_from_env():
    env = {"NODE_NAMES": "gpu[01-03]", "GPUS_PER_NODE": "8", "CPUS_PER_NODE": "16", "MEM_PER_NODE": "64000",
           "SLURMD_TIMEOUT": "7", "SLURM_SETTINGS": "kill_wait=1,policy=easy,requeue_delay=1"}
    text = render_conf(env)
    cfg = parse_slurm_conf(text)
    assert [n.name for n in cfg.nodes] == ["gpu01", "gpu02", "gpu03"]
    assert {(n.cpus, n.real_memory, n.gpus) for n in cfg.nodes} == {(16, 64000, 8)}
    assert cfg.partitions[0].nodes == ["gpu01", "gpu02", "gpu03"]
    assert (cfg.slurmd_timeout, cfg.kill_wait, cfg.sched.policy, cfg.sched.requeue_delay) == (7, 1, "easy", 1)
    assert "SlurmctldHost=ctld\n" in text and "SlurmctldPort=6817\n" in text
    assert "jwt_key=/etc/slurm/jwt_hs256.key" in text and "StateSaveLocation=/var/spool/slurmctld" in text
    assert cfg.accounting_enforce == {"associations"}  # a class's jobs go to their users' own accounts


def test_bad_settings_are_refused():
    with pytest.raises(SystemExit, match="expected name=value"):
        render_conf({"NODE_NAMES": "gpu01", "SLURM_SETTINGS": "kill_wait"})
    with pytest.raises(ValueError, match="unknown cluster setting 'no_such'"):
        render_conf({"NODE_NAMES": "gpu01", "SLURM_SETTINGS": "no_such=1"})


def test_docker_cluster_knows_the_config_its_controller_writes(tmp_path):
    c = DockerCluster(3, 2, 8, 16000, dir=tmp_path, slurmd_timeout=3, kill_wait=1)
    assert c.node_names == ["gpu01", "gpu02", "gpu03"]
    assert (c.config.slurmd_timeout, c.config.kill_wait) == (3, 1)
    compose.write(tmp_path, c.shape)
    again = DockerCluster.from_dir(tmp_path)
    assert (again.shape, again.config.nodes) == (c.shape, c.config.nodes)


def test_the_images_python_is_on_the_path_of_login_shells_and_su(tmp_path):
    """/etc/profile sets PATH anew for a login shell (`cluster shell`'s bash -l), then reads
    profile.d; `su -` starts from login.defs' ENV_PATH and ENV_SUPATH."""
    from minislurm.cluster.container import install
    (tmp_path / "bin").mkdir()
    (tmp_path / "login.defs").write_text("UMASK\t\t022\nENV_SUPATH\tPATH=/usr/sbin:/usr/bin\n"
                                        "ENV_PATH\tPATH=/usr/bin:/bin:/usr/games\nUSERGROUPS_ENAB yes\n")
    for _ in range(2):  # twice: the same files
        install(str(tmp_path / "bin"), str(tmp_path))
    assert (tmp_path / "login.defs").read_text() == (
        "UMASK\t\t022\nENV_SUPATH\tPATH=/opt/venv/bin:/usr/sbin:/usr/bin\n"
        "ENV_PATH\tPATH=/opt/venv/bin:/usr/bin:/bin:/usr/games\nUSERGROUPS_ENAB yes\n")
    profile = tmp_path / "profile.d" / "minislurm-venv.sh"
    for path, want in (("/usr/bin:/bin", "/opt/venv/bin:/usr/bin:/bin"), ("/bin:/opt/venv/bin", "/bin:/opt/venv/bin")):
        r = subprocess.run(["/bin/sh", "-c", f'. {profile}; . {profile}; echo "$PATH"'], env={"PATH": path},
                           capture_output=True, text=True)
        assert r.stdout == f"{want}\n", r.stderr
    assert (tmp_path / "bin" / "srun").read_text().startswith("#!/opt/venv/bin/python -S\n")
    assert (tmp_path / "bin" / "minislurm").read_text().startswith("#!/opt/venv/bin/python -s\n")


# -- users ------------------------------------------------------------------------------------------
def test_users_get_fresh_ids_their_own_group_and_keep_them(tmp_path, monkeypatch):
    # The image's own accounts, not this machine's (which may have an alice of its own).
    monkeypatch.setattr(users, "_image_accounts", lambda: ({"root", "lab"}, {0, 1000}, {0, 1000}))
    alice, new = users.add("alice", folder=tmp_path)
    bob, _ = users.add("bob", folder=tmp_path)
    carol, _ = users.add("carol", 2001, folder=tmp_path)
    assert new and (alice.uid, alice.gid, bob.uid, carol.uid) == (1001, 1001, 1002, 2001)
    assert users.add("alice", folder=tmp_path) == (alice, False)  # again: the same user
    with pytest.raises(users.UserError, match="exists with uid 1001"):
        users.add("alice", 3000, folder=tmp_path)
    with pytest.raises(users.UserError, match="invalid user name"):
        users.add("Bad!", folder=tmp_path)
    with pytest.raises(users.UserError, match="lab is a system account of the image"):
        users.add("lab", folder=tmp_path)
    assert (tmp_path / "passwd").read_text().splitlines()[0] == "alice:x:1001:1001:alice:/home/alice:/bin/bash"
    assert (tmp_path / "group").read_text().splitlines() == ["alice:x:1001:", "bob:x:1002:", "carol:x:2001:"]
    assert oct((tmp_path / "passwd").stat().st_mode & 0o777) == "0o644"
    # A shadow entry each, no password, that root alone reads: PAM's account check (`su - alice`)
    # refuses a user whose passwd says x and who has none.  One missing (an older image's) is added.
    assert (tmp_path / "shadow").read_text().splitlines() == ["alice:*:::::::", "bob:*:::::::", "carol:*:::::::"]
    assert oct((tmp_path / "shadow").stat().st_mode & 0o777) == "0o600"
    (tmp_path / "shadow").write_text("alice:*:::::::\n")
    users.add("bob", folder=tmp_path)
    assert (tmp_path / "shadow").read_text().splitlines() == ["alice:*:::::::", "bob:*:::::::", "carol:*:::::::"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_home_and_token_belong_to_the_user_alone(tmp_path, monkeypatch):
    from minislurm.common.auth import Signer, create_key
    monkeypatch.setattr(users, "HOME", tmp_path / "home")
    (tmp_path / "home").mkdir()
    skel = tmp_path / "skel" / "examples"
    skel.mkdir(parents=True)
    (skel / "train.sbatch").write_text("#!/bin/bash\n")
    user = users.User("dave", 4242, 4242)
    users.make_home(user, [skel])
    st = os.stat(tmp_path / "home" / "dave")
    assert (st.st_uid, st.st_mode & 0o777) == (4242, 0o700)
    assert os.stat(tmp_path / "home" / "dave" / "examples" / "train.sbatch").st_uid == 4242
    key = create_key(tmp_path / "key")
    token = users.write_token(user, tmp_path / "tokens", tmp_path / "key")
    st = os.stat(token)
    assert (st.st_uid, st.st_mode & 0o777) == (4242, 0o600)
    assert Signer(key).verify(token.read_text().strip())["sun"] == "dave"
    (tmp_path / "home" / "dave" / "mine").write_text("x")
    users.make_home(user, [skel])  # an existing home is left alone
    assert (tmp_path / "home" / "dave" / "mine").exists()


def test_associations_are_written_once_and_an_operator_is_marked(tmp_path):
    from minislurm.core.accounts import parse_accounts
    accounts = tmp_path / "accounts.conf"
    alice, teacher = users.User("alice", 1001, 1001), users.User("teacher", 1002, 1002)
    assert users.associate(alice, accounts=accounts) and not users.associate(alice, accounts=accounts)
    assert users.associate(teacher, accounts=accounts)
    assert users.associate(teacher, operator=True, accounts=accounts)  # made an operator later
    assert not users.associate(teacher, operator=True, accounts=accounts)
    assert not users.associate(teacher, accounts=accounts)  # adding again does not demote
    tree = parse_accounts(accounts.read_text())
    assert tree.operators() == {"teacher"}
    assert {a.user for a in tree.users()} == {"alice", "teacher"}
    assert {a.account for a in tree.users()} == {"default"}


# -- refusals, before anything starts ------------------------------------------------------------
@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    """A PATH of fake commands only: ``fake("docker", "case ... esac")``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(os, "geteuid", lambda: 0)

    def fake(name: str, body: str) -> None:
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return fake


ENGINE_OK = 'case "$1" in info) echo 20.10.24 ;; compose) exit 1 ;; image) exit 1 ;; *) exit 0 ;; esac'


def test_no_docker_command(fake_bin):
    with pytest.raises(engine.EngineError, match="^no docker command: install a Docker engine"):
        engine.check_engine()


def test_not_root(fake_bin, monkeypatch):
    fake_bin("docker", ENGINE_OK)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(engine.EngineError, match="needs root"):
        engine.check_engine()


def test_no_engine_answers(fake_bin):
    fake_bin("docker", 'echo "Cannot connect to the Docker daemon" >&2; exit 1')
    with pytest.raises(engine.EngineError, match=r"^no Docker engine answers \(docker info failed\): start it"):
        engine.check_engine()


@pytest.mark.parametrize("v2, v1, expect", [
    ("2.20.2", None, ["docker", "compose"]),
    (None, "1.29.2", ["docker-compose"]),
    (None, "1.25.0", "unknown compose version '1.25.0'"),
    (None, "nonsense", "unknown compose version 'nonsense'"),
    (None, None, "no docker compose: install"),
])
def test_compose_versions(fake_bin, v2, v1, expect):
    fake_bin("docker", f'[ "$1" = compose ] && {{ {"echo " + v2 if v2 else "exit 1"}; exit $?; }}; exit 0')
    if v1:
        fake_bin("docker-compose", f"echo {v1}")
    if isinstance(expect, list):
        assert engine.compose_command() == expect
    else:
        with pytest.raises(engine.EngineError, match=expect):
            engine.compose_command()


def test_more_gpus_than_the_host_has(fake_bin):
    fake_bin("nvidia-smi", 'for i in 0 1 2 3; do echo "GPU $i: NVIDIA H100 (UUID: GPU-$i)"; done')
    fake_bin("docker", 'echo \'{"runc":{"path":"runc"}}\'')
    with pytest.raises(engine.EngineError, match=r"GPU mode needs 8 NVIDIA GPUs .* this host has 4"):
        engine.check_gpus(8)
    with pytest.raises(engine.EngineError, match="NVIDIA's container toolkit"):
        engine.check_gpus(4)
    fake_bin("docker", 'echo \'{"nvidia":{"path":"nvidia-container-runtime"},"runc":{}}\'')
    engine.check_gpus(4)


def test_a_port_in_use():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(engine.EngineError, match=f"port {s.getsockname()[1]} is in use"):
            engine.check_port(s.getsockname()[1])


def test_no_image_and_no_debootstrap(fake_bin):
    fake_bin("docker", 'case "$1" in image) exit 1 ;; *) exit 0 ;; esac')
    with pytest.raises(engine.EngineError, match=r"needs debootstrap \(apt-get install debootstrap\)"):
        engine.ensure_image("minislurm-cluster:latest")


def test_cluster_up_refuses_in_one_line_and_leaves_nothing(fake_bin, tmp_path, capsys):
    fake_bin("docker", 'echo "Cannot connect to the Docker daemon" >&2; exit 1')
    folder = tmp_path / "cluster"
    assert main(["cluster", "up", "--docker", "--dir", str(folder)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minislurm cluster: error: no Docker engine answers")
    assert not folder.exists() or not any(folder.iterdir())


def test_gpu_flag_without_docker_is_refused(capsys, tmp_path):
    assert main(["cluster", "up", "--gpu", "--dir", str(tmp_path)]) == 1
    assert "are for docker clusters (add --docker)" in capsys.readouterr().err


def test_a_stale_image_is_rebuilt(fake_bin, tmp_path, monkeypatch):
    """build.sh labels the image with a digest of the sources; cluster up rebuilds an image
    whose label differs (the code changed since), and leaves a current one alone."""
    root = Path(__file__).resolve().parents[2]
    current = engine.source_hash(root)
    assert len(current) == 16 and current == engine.source_hash(root)
    fake_bin("docker", 'case "$*" in *"image inspect -f"*) echo "$LABEL_SEEN" ;; *) exit 0 ;; esac')
    monkeypatch.setenv("LABEL_SEEN", current)
    assert engine.image_is_current("minislurm-cluster:latest")
    monkeypatch.setenv("LABEL_SEEN", "0123456789abcdef")
    assert not engine.image_is_current("minislurm-cluster:latest")
    # Any change to the files the image holds changes the digest.
    for name in engine.SOURCES:
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "minislurm" / "a.py").write_text("x = 1\n")
    before = engine.source_hash(tmp_path)
    (tmp_path / "minislurm" / "a.py").write_text("x = 2\n")
    assert engine.source_hash(tmp_path) != before
    assert "minislurm.source=$source" in (root / "docker" / "minislurm" / "build.sh").read_text()


def test_grading_rebuilds_a_stale_grader_image_first(fake_bin, tmp_path, monkeypatch):
    """The checks run the image's minislurm, so `grade run --docker` rebuilds an image whose
    label is not the sources' digest, with the grader's build.sh, and leaves a current one alone."""
    from minislurm.cli.grade import rebuild_if_stale

    project = tmp_path / "project"
    script = project / "docker" / "grader" / "build.sh"
    script.parent.mkdir(parents=True)
    script.write_text('echo "$IMAGE $*" >> "$BUILT"\n')
    for name in engine.SOURCES:
        (project / name).mkdir()
    fake_bin("docker", 'case "$*" in *"image inspect -f"*) echo "$LABEL_SEEN" ;; *) exit 0 ;; esac')
    (tmp_path / "bin" / "sh").symlink_to("/bin/sh")
    monkeypatch.setattr(engine, "GRADER_BUILD_SCRIPT", script)
    monkeypatch.setenv("BUILT", str(tmp_path / "built"))

    monkeypatch.setenv("LABEL_SEEN", engine.source_hash(project))
    rebuild_if_stale("minislurm-grader")
    assert not (tmp_path / "built").exists()
    monkeypatch.setenv("LABEL_SEEN", "0123456789abcdef")
    rebuild_if_stale("minislurm-grader")
    assert (tmp_path / "built").read_text() == "minislurm-grader -q\n"
    grader_build = Path(__file__).resolve().parents[2] / "docker" / "grader" / "build.sh"
    assert "minislurm.source=$source" in grader_build.read_text()
