"""The entrypoint of the docker cluster's image: ``controller``, ``node``, ``login`` or ``hub``.

- ``controller`` (host ``ctld``): on its first start it writes what the cluster shares on the
  ``etc`` volume, the way an administrator prepares a real cluster: slurm.conf from the
  environment (.env's node shape), the cluster key (root only), the lab user with a home and a
  token, and root's token; slurm.conf last, so a node that sees it sees everything.  A restart
  keeps them all (same key, tokens and saved jobs).  Then it runs slurmctld.
- ``node`` (host ``gpu01``, ...): waits for slurm.conf, then runs the node agent as root, named
  after its host, on every address at slurmd's port, reached by its host name; GPUs as
  configured, or (``GPUS_FROM=nvidia-smi``) what nvidia-smi lists.
- ``login``: waits for slurm.conf; the commands are on PATH for everyone (``/usr/local/bin``),
  and so is the image's Python, in every shell (:func:`venv_on_path`).
  With ``JUPYTER=1`` it serves JupyterLab for the lab user on port 8888.
- ``hub`` (host ``hub``, with ``--hub``): waits for slurm.conf, then runs JupyterHub as root,
  configured by :mod:`minislurm.cluster.hub` (each student's server a Slurm job).

Runs under tini (PID 1), which forwards ``docker stop``'s SIGTERM and reaps.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from minislurm.cluster.base import COMMANDS
from minislurm.cluster.compose import CTLD_PORT, SLURMD_PORT

ETC = Path("/etc/slurm")
CONF = ETC / "slurm.conf"
KEY = ETC / "jwt_hs256.key"
STATE = Path("/var/spool/slurmctld")
SPOOL = Path("/var/spool/slurmd")
VENV_BIN = "/opt/venv/bin"
PYTHON = f"{VENV_BIN}/python"


def _settings(text: str) -> dict:
    """``kill_wait=1,policy=easy`` -> {"kill_wait": 1, "policy": "easy"}."""
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"SLURM_SETTINGS: expected name=value, got {item!r}")
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value
    return out


def render_conf(env: dict) -> str:
    """slurm.conf for the nodes ``NODE_NAMES``, each with the .env shape, with
    ``AccountingStorageEnforce=associations``."""
    from minislurm.cluster.confgen import apply_settings, lab_config, write_conf
    from minislurm.core.hostlist import expand
    names = expand(env["NODE_NAMES"])
    cfg = lab_config(len(names), int(env.get("GPUS_PER_NODE", 8)), int(env.get("CPUS_PER_NODE", 32)),
                     int(env.get("MEM_PER_NODE", 256_000)))
    for node, name in zip(cfg.nodes, names):
        node.name = name
    cfg.partitions[0].nodes = list(names)
    cfg.slurmd_timeout = int(env.get("SLURMD_TIMEOUT", 5))
    # A class shares this cluster: a job is charged to its user's own account (the one `cluster
    # add-users` gives them), never to one they name at will (SLURM_SETTINGS may change it).
    cfg.accounting_enforce = frozenset({"associations"})
    apply_settings(cfg, _settings(env.get("SLURM_SETTINGS", "")))
    return write_conf(cfg, host="ctld", addr=None, port=CTLD_PORT, key_file=str(KEY), state_dir=str(STATE))


def _write_new(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.new")
    tmp.write_text(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def prepare_cluster(env: dict) -> None:
    """The controller's first start: key, users, tokens, then slurm.conf."""
    from minislurm.cluster import users
    from minislurm.common.auth import create_key
    ETC.mkdir(parents=True, exist_ok=True)
    os.chmod(ETC, 0o755)
    if not KEY.exists():
        create_key(KEY)
    text = render_conf(env)  # a bad .env fails here, before anything is written
    root = users.User("root", 0, 0)
    users.write_token(root, ETC / "tokens", KEY)
    lab, _ = users.add(env.get("LAB_USER", "student"), int(env.get("LAB_UID", 1000)))
    users.make_home(lab)
    users.write_token(lab, ETC / "tokens", KEY)
    users.associate(lab, accounts=ETC / "accounts.conf")
    _write_new(CONF, text)


def wait_for_conf() -> None:
    said = False
    while not CONF.exists():  # written last
        if not said:
            print(f"{socket.gethostname()}: waiting for the controller to write {CONF}", flush=True)
            said = True
        time.sleep(0.2)


def controller(env: dict) -> int:
    if not CONF.exists():
        prepare_cluster(env)
    os.execv(PYTHON, [PYTHON, "-m", "minislurm.ctld", "--conf", str(CONF)])  # the daemon is the container's process


def node(env: dict) -> int:
    wait_for_conf()
    name = socket.gethostname()
    argv = [PYTHON, "-m", "minislurm.slurmd", "--name", name, "--conf", str(CONF), "--bind", "0.0.0.0",
            "--addr", name, "--port", str(SLURMD_PORT), "--spool", str(SPOOL)]
    if env.get("GPUS_FROM") == "nvidia-smi":
        argv += ["--gpus", "auto"]
    os.execv(PYTHON, argv)


def login(env: dict) -> int:
    wait_for_conf()
    if env.get("JUPYTER") == "1":
        user = env.get("LAB_USER", "student")
        uid = int(env.get("LAB_UID", 1000))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        home = f"/home/{user}"
        os.chdir(home)
        os.environ.update(HOME=home, USER=user, LOGNAME=user, SHELL="/bin/bash")
        os.execv(PYTHON, [PYTHON, "-m", "jupyterlab", "--ip=0.0.0.0", "--port=8888", "--no-browser",
                          f"--ServerApp.root_dir={home}"])
    os.execvp("sleep", ["sleep", "infinity"])
    return 0


def hub(env: dict) -> int:
    from minislurm.cluster.hub import HUB_DIR
    wait_for_conf()
    os.makedirs(HUB_DIR, mode=0o700, exist_ok=True)
    os.chdir(HUB_DIR)
    config = Path(HUB_DIR) / "jupyterhub_config.py"
    _write_new(config, "from minislurm.cluster.hub import configure\n\nconfigure(c)  # noqa: F821 (JupyterHub's)\n")
    os.execv(f"{VENV_BIN}/jupyterhub", [f"{VENV_BIN}/jupyterhub", "-f", str(config)])


def install(bin_dir: str = "/usr/local/bin", etc: str = "/etc") -> int:
    """At image build: the commands under their Slurm names (as a local cluster's, without
    site's start-up: :func:`minislurm.cluster.system.shim_text`), and ``minislurm``, for
    everyone; the image's Python first on every shell's PATH."""
    import site

    from minislurm.cluster.system import shim_text
    for name in (*COMMANDS, "minislurm"):  # run by the image's Python: its site-packages are ours
        path = Path(bin_dir) / name
        path.write_text(shim_text(name, None, PYTHON, tuple(site.getsitepackages())) if name != "minislurm" else
                        f"#!{PYTHON} -s\nimport sys\nfrom minislurm.cli.main import main\nsys.exit(main())\n")
        path.chmod(0o755)
    venv_on_path(Path(etc))
    return 0


PROFILE = f"""\
# minislurm: the image's Python (torch, minislurm) first on PATH, in login shells too, as the
# image's own PATH has it: `python train_ddp.py` on the login node and in jobs is that one.
case ":$PATH:" in
  *:{VENV_BIN}:*) ;;
  *) PATH="{VENV_BIN}:$PATH"; export PATH ;;
esac
"""


def venv_on_path(etc: Path) -> None:
    """The image's ENV PATH reaches what ``docker exec`` starts, but a login shell (``cluster
    shell``'s ``bash -l``, ``su -``) gets its PATH from /etc/profile, which sets it anew and then
    reads profile.d; ``su -`` and ``login`` first set login.defs' ENV_PATH (ENV_SUPATH for root).
    A job's PATH is the submitting shell's (``--export=ALL``)."""
    (etc / "profile.d").mkdir(parents=True, exist_ok=True)
    (etc / "profile.d" / "minislurm-venv.sh").write_text(PROFILE)
    defs = etc / "login.defs"
    lines = defs.read_text().splitlines() if defs.exists() else []
    for key, default in (("ENV_SUPATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                         ("ENV_PATH", "/usr/local/bin:/usr/bin:/bin")):
        at = next((i for i, line in enumerate(lines) if line.split()[:1] == [key]), len(lines))
        value = lines[at].split(None, 1)[1].removeprefix("PATH=") if at < len(lines) else default
        if VENV_BIN not in value.split(":"):
            lines[at:at + 1] = [f"{key}\tPATH={VENV_BIN}:{value}"]
    defs.write_text("".join(f"{line}\n" for line in lines))


def main(argv: list[str]) -> int:
    roles = {"controller": controller, "node": node, "login": login, "hub": hub}
    if argv[:1] == ["install"]:
        return install(*argv[1:])
    if len(argv) != 1 or argv[0] not in roles:
        print("usage: minislurm-container controller|node|login|hub", file=sys.stderr)
        return 2
    return roles[argv[0]](dict(os.environ))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
