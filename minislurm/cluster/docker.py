"""A whole cluster as containers: a controller, N GPU nodes and a login node (docker/compose.yaml).

    with DockerCluster(nodes=2, gpus_per_node=4) as cluster:
        print(cluster.run("srun", "-N2", "hostname").stdout)      # gpu01, gpu02: real host names

Each node is a container with its own host name, address and file system; /home is a volume
every container mounts (as NFS would be); users are the same everywhere (see
:mod:`minislurm.cluster.users`).  Commands run on the login node as the lab user, the way a
user types them after ``ssh login``.  A node failure is a real one: :meth:`kill_node` is
``docker kill`` (a crash), :meth:`partition` takes the node off the network (its jobs keep
running, and must be fenced when it comes back), :meth:`stop_node` is ``docker stop`` (a clean
shutdown), :meth:`reboot_node` ``docker restart``.

The cluster's files live in a folder (default ``~/.minislurm/docker``): the compose files and
``.env`` it was started from, and ``client/`` with what this machine's own calls to the
controller need (its address, root's token).  Its containers, network and volumes are named
after that folder (``msd-<hash>``), so two clusters on one host, of one user or of several,
never meet, and none of them meets the real-Slurm twin (``minislurm-c1``, ...).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from minislurm.client import Client
from minislurm.cluster import compose, engine, project
from minislurm.cluster.base import Cluster, shape_text, wait_for
from minislurm.cluster.container import render_conf
from minislurm.cluster.project import project_name
from minislurm.core.slurmconf import parse_slurm_conf

DEFAULT_DIR = Path.home() / ".minislurm" / "docker"


class DockerCluster(Cluster):
    kind = "docker"
    python = "python"  # /opt/venv/bin/python, first on the containers' PATH

    def __init__(self, nodes: int = 4, gpus_per_node: int = 8, cpus_per_node: int = 32, mem: int = 256_000,
                 *, dir: str | Path | None = None, gpu: bool = False, image: str = compose.IMAGE,
                 user: str = "student", uid: int = 1000, jupyter_port: int | None = None,
                 hub_port: int | None = None, policy: str = "conservative", build: bool = True,
                 gpus_from: str = "config", **settings):
        if nodes < 1:
            raise ValueError(f"--nodes must be at least 1, not {nodes}")
        self.dir = Path(dir).absolute() if dir else DEFAULT_DIR
        self.project = project_name(self.dir)
        self.gpu, self.build, self.user, self.uid = gpu, build, user, uid
        timeout = int(settings.pop("slurmd_timeout", 5))
        if policy != "conservative":
            settings["policy"] = policy
        self.shape = compose.Shape(nodes, gpus_per_node, cpus_per_node, mem, project=self.project, image=image,
                                   lab_user=user, lab_uid=uid, slurmd_timeout=timeout,
                                   settings=",".join(f"{k}={v}" for k, v in settings.items()),
                                   jupyter_port=jupyter_port, hub_port=hub_port, gpus_from=gpus_from)
        # What the controller will write into slurm.conf, from the same .env values.
        self.config = parse_slurm_conf(render_conf(self._env()))
        self._client: Client | None = None
        self._compose_cmd: list[str] | None = None

    @classmethod
    def from_dir(cls, dir: str | Path, **kw) -> "DockerCluster":
        """The cluster whose compose files and .env are in ``dir`` (``cluster up --docker`` wrote them)."""
        folder = Path(dir).absolute()
        return cls(dir=folder, **{**compose.read(folder), **kw})

    @staticmethod
    def recorded(dir: str | Path) -> bool:
        return (Path(dir) / "compose.yaml").is_file() and (Path(dir) / ".env").is_file()

    def _env(self) -> dict:
        s = self.shape
        return {"NODE_NAMES": ",".join(s.names), "GPUS_PER_NODE": s.gpus_per_node, "CPUS_PER_NODE": s.cpus_per_node,
                "MEM_PER_NODE": s.mem, "SLURMD_TIMEOUT": s.slurmd_timeout, "SLURM_SETTINGS": s.settings}

    # -- names --------------------------------------------------------------------------
    def container(self, name: str) -> str:
        """The container of ``ctld``, ``login`` or a node."""
        return f"{self.project}-{name}"

    @property
    def network(self) -> str:
        return f"{self.project}_cluster"

    def volume_path(self, volume: str) -> Path:
        """Where a volume's files are on this host (root may read them)."""
        r = engine.docker("volume", "inspect", "-f", "{{.Mountpoint}}", f"{self.project}_{volume}")
        return Path(r.stdout.strip())

    @property
    def home(self) -> Path:
        """/home of the containers, seen from this host."""
        return self.volume_path("home")

    def inside(self, path: str | Path) -> str:
        """A path of this host under :attr:`home` as the containers see it (others as given)."""
        path = Path(path)
        try:
            return str(Path("/home") / path.relative_to(self.home))
        except ValueError:
            return str(path)

    # -- life ---------------------------------------------------------------------------
    def compose(self, *args: str, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess:
        files = [f for f in ("compose.yaml", "compose.gpu.yaml") if (self.dir / f).exists()]
        argv = [*self._compose_cmd, "-p", self.project, *sum((["-f", f] for f in files), []), *args]
        r = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode:
            last = (r.stderr.strip() or r.stdout.strip()).splitlines()
            raise engine.EngineError(f"{' '.join(argv[:2])} {args[0]} failed: {last[-1] if last else r.returncode}")
        return r

    def check(self) -> None:
        """Everything that must hold before anything starts (EngineError, one line, if not)."""
        engine.check_engine()
        self._compose_cmd = engine.compose_command()
        if self.gpu:
            engine.check_gpus(self.shape.nodes * self.shape.gpus_per_node)
        for port in (self.shape.jupyter_port, self.shape.hub_port):
            if port and not self.running():
                engine.check_port(port)
        if self.build:
            engine.ensure_image(self.shape.image)
        elif not engine.image_exists(self.shape.image):
            raise engine.EngineError(f"no image {self.shape.image}: build it (make cluster-image)")

    def up(self, timeout: float = 60.0, *, idle: bool = True) -> "DockerCluster":
        """Start (or start again) every container; return once every node is idle (with
        ``idle=False``, once every agent has registered: a drained node stays drained)."""
        self.check()
        existed = self.exists()
        compose.write(self.dir, self.shape, gpu=self.gpu, why=" for this cluster")
        try:
            self.compose("up", "-d", "--remove-orphans")
            self.wait_controller(timeout)
            if idle:
                self.wait_nodes(timeout)
            else:
                api = self.client()
                wait_for(lambda: all(n["addr"] and "NOT_RESPONDING" not in n["flags"]
                                     for n in api.call("GET", "/nodes")["nodes"]), timeout,
                         "every node's agent to register")
            if self.shape.hub_port:
                wait_for(self.hub_answers, timeout, "JupyterHub to answer")
        except BaseException:
            if not existed:  # a failed start leaves nothing; a cluster that was there (its
                self.down()  # jobs, its users' /home) is never removed by a failed resume
            raise
        return self

    def exists(self) -> bool:
        """Whether Docker holds anything of this cluster (containers or volumes)."""
        return project.exists(self.project)

    def running(self) -> list[str]:
        """The cluster's containers that run now."""
        return project.running(self.project)

    def down(self) -> None:
        """Remove every container, network and volume of this cluster (also when half-started)."""
        if self._compose_cmd is None:
            try:
                self._compose_cmd = engine.compose_command()
            except engine.EngineError:
                self._compose_cmd = None
        if self._compose_cmd and (self.dir / "compose.yaml").exists():
            self.compose("down", "-v", "--remove-orphans", "-t", "5", check=False)
        project.remove(self.project)
        self._client = None

    @property
    def roles(self) -> list[str]:
        """The cluster's containers, by role name."""
        return ["ctld", *self.node_names, "login", *(["hub"] if self.shape.hub_port else [])]

    def save_logs(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in self.roles:
            logs = engine.docker("logs", self.container(name), check=False)
            (folder / f"{name}.log").write_text(logs.stdout + logs.stderr)

    def _controller_gone(self) -> str | None:
        state = engine.docker("inspect", "-f", "{{.State.Status}}", self.container("ctld"), check=False).stdout.strip()
        if state in ("exited", "dead"):
            logs = engine.docker("logs", "--tail", "1", self.container("ctld"), check=False)
            last = (logs.stderr or logs.stdout).strip().splitlines()
            return f"slurmctld exited: {last[-1] if last else 'no log'} (docker logs {self.container('ctld')})"
        return None

    # -- talking to it ------------------------------------------------------------------
    @property
    def hub_url(self) -> str:
        """JupyterHub, as this host reaches it (the published port on 127.0.0.1)."""
        return f"http://127.0.0.1:{self.shape.hub_port}"

    def hub_answers(self) -> bool:
        """Whether JupyterHub answers its API's root (it does once it and its proxy run)."""
        import urllib.request
        try:
            with urllib.request.urlopen(f"{self.hub_url}/hub/api", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def client(self, token: str | None = None) -> Client:
        """A client on this host, straight to the controller's address on the cluster's
        network, with root's token (an operator's calls: tests, the demo, ``cluster status``)."""
        folder = self.dir / "client"
        ip = engine.docker("inspect", "-f", f'{{{{(index .NetworkSettings.Networks "{self.network}").IPAddress}}}}',
                           self.container("ctld"), check=False).stdout.strip()
        conf = folder / "slurm.conf"
        if self._client is None or self._client.address[0] != ip:
            tokens = self.volume_path("etc") / "tokens" / "root"
            # the container writes the token into a file it has just made: wait for its text
            wait_for(lambda: ip and tokens.exists() and tokens.read_text().strip(), 30, "the controller's files")
            folder.mkdir(parents=True, exist_ok=True)
            conf.write_text(f"SlurmctldHost=ctld({ip})\nSlurmctldPort={compose.CTLD_PORT}\n")
            self._client = Client(conf, tokens.read_text().strip(), patience=0)
        return Client(conf, token or self._client.token, patience=0)

    def uid_of(self, user: str) -> int:
        """A cluster user's uid (the lab user's is known; others are looked up on the login node,
        whose NSS reads the cluster's passwd)."""
        if user == self.user:
            return self.uid
        if user == "root":
            return 0
        r = subprocess.run(["docker", "exec", self.container("login"), "id", "-u", user], capture_output=True,
                           text=True, timeout=60)
        if r.returncode:
            raise engine.EngineError(f"no user {user} on the cluster (minislurm cluster add-users {user})")
        return int(r.stdout)

    def exec_argv(self, *argv: str, cwd: str | None = None, env: dict | None = None, tty: bool = False,
                  where: str = "login", user: str | None = None) -> list[str]:
        """``docker exec`` on a container as the lab user (or ``user``: a user of the cluster, or
        root).  By uid: docker looks names up in the image's /etc/passwd, not the cluster's."""
        user = user or self.user
        uid = self.uid_of(user)
        home = "/root" if uid == 0 else f"/home/{user}"
        ids = ["-u", f"{uid}:{uid}", "-e", f"HOME={home}", "-e", f"USER={user}", "-e", f"LOGNAME={user}"]
        extra = [w for k, v in (env or {}).items() for w in ("-e", f"{k}={v}")]
        return ["docker", "exec", "-i", *(["-t"] if tty else []), *ids, *extra,
                "-w", self.inside(cwd) if cwd is not None else home, self.container(where), *argv]

    def run(self, *argv: str, input: str | None = None, check: bool = False, timeout: float = 120,
            env: dict | None = None, cwd: str | None = None, user: str | None = None) -> subprocess.CompletedProcess:
        """As :meth:`Cluster.run`, on the login node, as the lab user (or ``user``)."""
        return subprocess.run(self.exec_argv(*argv, cwd=cwd, env=env, user=user), input=input, text=True,
                              capture_output=True, check=check, timeout=timeout)

    def workdir(self, name: str = "work") -> Path:
        """``/home/<user>/<name>``, made by the user on the login node; its path on this host."""
        subprocess.run(self.exec_argv("mkdir", "-p", name), check=True, capture_output=True, timeout=60)
        return self.home / self.user / name

    def put(self, source: Path, folder: Path) -> None:
        """The files of ``source``, unpacked by the user on the login node (so they are theirs)."""
        files = [item.name for item in Path(source).iterdir() if item.is_file()]
        tar = subprocess.run(["tar", "-C", str(source), "-c", *files], capture_output=True, check=True)
        subprocess.run(self.exec_argv("tar", "-x", cwd=folder), input=tar.stdout, capture_output=True, check=True,
                       timeout=60)

    def slurm_conf(self) -> str:
        """What the controller wrote on the etc volume (every container reads it)."""
        return (self.volume_path("etc") / "slurm.conf").read_text()

    def write_file(self, path: Path, text: str, mode: int = 0o644) -> None:
        path = Path(path)
        argv = self.exec_argv("sh", "-c", 'cat > "$1" && chmod "$2" "$1"', "sh", path.name, f"{mode:o}", cwd=path.parent)
        subprocess.run(argv, input=text, text=True, capture_output=True, check=True, timeout=60)

    def describe(self) -> str:
        shape = shape_text(self.shape.nodes, self.shape.gpus_per_node, "NVIDIA GPU" if self.gpu else "GPU")
        return (f"a docker cluster: {shape}, a controller, the nodes and a login node as containers "
                f"({self.project}-*, image {self.shape.image})")

    # -- failures -------------------------------------------------------------------------
    def kill_node(self, name: str) -> None:
        engine.docker("kill", self.container(name))

    def start_node(self, name: str) -> None:
        engine.docker("start", self.container(name))

    def stop_node(self, name: str) -> None:
        """A clean shutdown (``docker stop``): the agent is told to stop, and stops its jobs."""
        engine.docker("stop", "-t", "10", self.container(name))

    def reboot_node(self, name: str) -> None:
        engine.docker("restart", "-t", "10", self.container(name))

    def partition(self, name: str) -> None:
        """Take a node off the cluster's network; it and its jobs keep running, cut off."""
        engine.docker("network", "disconnect", self.network, self.container(name))

    def heal(self, name: str) -> None:
        """Put a node back on the network, under its name (its address may change)."""
        engine.docker("network", "connect", "--alias", name, self.network, self.container(name))

    def restart_controller(self, timeout: float = 30.0, *, crash: bool = False) -> None:
        if crash:
            engine.docker("kill", self.container("ctld"))
            engine.docker("start", self.container("ctld"))
        else:
            engine.docker("restart", "-t", "10", self.container("ctld"))
        self.wait_controller(timeout)

    def add_users(self, *names: str, operator: bool = False,
                  passwords: dict[str, str] | None = None) -> tuple[list[tuple[str, int, str]], list[str]]:
        """Unix accounts every container knows, each with a home, a token and an association
        (``name[:uid]``; ``operator``: AdminLevel=Operator, for an instructor): (name, uid,
        "added" or "exists") for each that worked, and the errors.  ``passwords`` (name ->
        password) are their JupyterHub logins, sent on stdin and kept hashed.  A new operator
        restarts the controller (it reads accounts.conf when it starts; jobs keep running)."""
        given = "".join(f"{name}:{password}\n" for name, password in (passwords or {}).items())
        r = subprocess.run(["docker", "exec", "-i", self.container("ctld"), "python", "-m", "minislurm.cluster.users",
                            "add", *(["--operator"] if operator else []), *(["--passwords"] if passwords else []),
                            *names], input=given, capture_output=True, text=True, timeout=120)
        lines = [line.split() for line in r.stdout.splitlines()]
        done = [(w[0], int(w[1]), w[2]) for w in lines]
        errors = [line.removeprefix("error: ") for line in r.stderr.splitlines() if line.strip()]
        if r.returncode and not errors:
            errors = [f"add-users failed (exit {r.returncode})"]
        if any(len(w) > 3 for w in lines):
            self.restart_controller(60)
        return done, errors
