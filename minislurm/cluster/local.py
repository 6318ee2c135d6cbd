"""A whole cluster on this machine: one controller and N node agents as local processes.

    with LocalCluster(nodes=2, gpus_per_node=4) as cluster:
        print(cluster.run("sbatch", "--wrap", "hostname").stdout)

The cluster lives in a directory (slurm.conf, the JWT key, state, logs, a ``bin/`` with the
command names) so ``minislurm cluster up`` can leave it running, ``cluster down`` can find
it again, and a later ``cluster up`` can resume it (:meth:`LocalCluster.resume`: same key, so
tokens already handed out keep working).  With ``netns=True`` (root only) every agent gets its own network namespace and
address, so the cluster crosses a real network.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from minislurm.client import Client
from minislurm.cluster import vnodes
from minislurm.cluster.base import COMMANDS, Cluster, shape_text, wait_for
from minislurm.cluster.confgen import apply_settings, free_port, lab_config, write_conf
from minislurm.cluster.stop import stop_process
from minislurm.core.slurmconf import load

__all__ = ["COMMANDS", "LocalCluster", "wait_for"]


class LocalCluster(Cluster):
    kind = "local"
    python = sys.executable

    def __init__(self, nodes: int = 4, gpus_per_node: int = 8, cpus_per_node: int = 32, mem: int = 256_000,
                 *, dir: str | Path | None = None, conf: str | Path | None = None, netns: bool = False,
                 policy: str = "conservative", outlive: bool = False, nodes_per_agent: int | None = None,
                 **settings):
        self.dir = Path(dir).absolute() if dir else Path.home() / ".minislurm" / "cluster"
        self.netns = netns
        # The daemons stop when this Python process ends, unless asked to outlive it
        # (``minislurm cluster up``): a killed notebook kernel leaves no cluster behind.
        self._daemon_flags = [] if outlive else ["--exit-with-parent"]
        if conf:
            self.config = load(conf)
        else:  # a cluster that would not fit is refused before its configuration is built
            if nodes < 1:
                raise ValueError(f"--nodes must be at least 1, not {nodes}")
            problem = vnodes.check_memory(nodes, nodes_per_agent or vnodes.default_per_agent(nodes))
            if problem:
                raise MemoryError(problem)
            self.config = lab_config(nodes, gpus_per_node, cpus_per_node, mem, policy=policy)
        apply_settings(self.config, settings)  # e.g. slurmd_timeout=3, kill_wait=1
        names = [n.name for n in self.config.nodes]
        recorded = self.dir / "nodes-per-agent"
        if nodes_per_agent is None and recorded.is_file():
            nodes_per_agent = int(recorded.read_text())
        if nodes_per_agent is None:
            nodes_per_agent = 1 if netns else vnodes.default_per_agent(len(names))
        self.nodes_per_agent = nodes_per_agent
        problem = vnodes.check_per_agent(self.nodes_per_agent, len(names))
        if problem is None and netns and self.nodes_per_agent > 1:
            problem = "--netns gives each node its own network namespace: one agent process per node"
        if problem:
            raise ValueError(problem)
        self.agents = vnodes.groups(names, self.nodes_per_agent)  # process name -> its nodes
        self.host_of = {node: unit for unit, nodes in self.agents.items() for node in nodes}
        self.procs: dict[str, subprocess.Popen] = {}
        self._controller_env: dict[str, str] = {}  # what restart_controller(env=...) adds
        self._adopted: dict[str, int] = {}  # daemons already running when resumed: name -> pid
        self.user = getpass.getuser()
        self._net = None

    # -- files ------------------------------------------------------------------------------
    @property
    def conf_path(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def key_path(self) -> Path:
        return self.dir / "jwt_hs256.key"

    @staticmethod
    def recorded(dir: str | Path) -> bool:
        """Whether ``dir`` holds a cluster made before (its slurm.conf and key), to resume."""
        return (Path(dir) / "slurm.conf").is_file() and (Path(dir) / "jwt_hs256.key").is_file()

    def _write_files(self) -> None:
        from minislurm.common.auth import create_key
        for sub in ("state", "log", "tokens", "bin", "spool"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        key = create_key(self.key_path)
        addr = self._net.ctld_addr if self._net else "127.0.0.1"
        self.port = free_port(addr if not self._net else "0.0.0.0")
        (self.dir / "nodes-per-agent").write_text(f"{self.nodes_per_agent}\n")
        self.faults_path.unlink(missing_ok=True)  # a new cluster: every node healthy
        self.conf_path.write_text(write_conf(self.config, host="localhost", addr=addr, port=self.port,
                                             key_file=str(self.key_path), state_dir=str(self.dir / "state")))
        self._write_token(key)
        self._write_shims()

    def _write_token(self, key: bytes) -> None:
        from minislurm.common.auth import Signer
        token = self.dir / "tokens" / self.user
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(Signer(key).user_token(self.user, 365 * 86400) + "\n")

    def _write_shims(self) -> None:
        from minislurm.cluster.system import shim_text
        for name in COMMANDS:
            shim = self.dir / "bin" / name
            shim.write_text(shim_text(name, self.conf_path, sys.executable))
            shim.chmod(0o755)

    def env(self) -> dict[str, str]:
        """Environment for commands aimed at this cluster (real Slurm names on PATH first)."""
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf_path)
        # The command names first, then the Python that runs the cluster (jobs use its packages).
        env["PATH"] = os.pathsep.join([str(self.dir / "bin"), os.path.dirname(sys.executable), env.get("PATH", "")])
        env.pop("SLURM_JWT", None)
        return env

    # -- processes -------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str], netns: str | None = None, hostname: str | None = None,
               env: dict | None = None) -> None:
        log = open(self.dir / "log" / f"{name}.log", "ab")
        if netns:
            # Its own network and, so that `srun hostname` names the node as on a real
            # cluster, its own host name (a UTS namespace); each step execs, so the pid stays.
            if shutil.which("unshare"):
                argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', hostname or name, *argv]
            argv = ["ip", "netns", "exec", netns, *argv]
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                            start_new_session=True, env={**self.env(), **(env or {})})
        log.close()

    def up(self, timeout: float = 30.0) -> "LocalCluster":
        problem = vnodes.check_memory(len(self.config.nodes), self.nodes_per_agent)
        if problem:
            raise MemoryError(problem)
        if self.netns:
            from minislurm.cluster.netns import Network
            self._net = Network(f"ms{os.getpid() % 10000}", [n.name for n in self.config.nodes])
            self._net.create()
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / "netns").write_text(" ".join([self._net.tag, *self._net.nodes]) + "\n")
        self._write_files()
        self._spawn_controller()
        self.wait_controller(timeout)
        for unit in self.agents:
            self._spawn_agent(unit)
        self.wait_nodes(timeout)
        return self

    def _spawn_controller(self) -> None:
        self._spawn("slurmctld", [sys.executable, "-m", "minislurm.ctld", "--conf", str(self.conf_path),
                                  *self._daemon_flags], env=self._controller_env)

    def _spawn_agent(self, unit: str) -> None:
        """Start agent process ``unit`` (``slurmd-gpu01``, or ``slurmd-gpu[001-032]``: virtual nodes)."""
        nodes = self.agents[unit]
        name = unit.removeprefix("slurmd-")
        bind = self._net.addr(name) if self._net else "127.0.0.1"
        spool = self.dir / "spool" / (name if len(nodes) == 1 else "")
        self._spawn(unit, [sys.executable, "-m", "minislurm.slurmd", "--name", name,
                           "--conf", str(self.conf_path), "--bind", bind, "--spool", str(spool),
                           "--faults", str(self.faults_path), *self._daemon_flags],
                    netns=self._net.ns(name) if self._net else None, hostname=name)
        self._write_pids()

    @property
    def faults_path(self) -> Path:
        return self.dir / "node-faults"

    def _write_pids(self) -> None:
        """The daemons' pids for ``cluster down``: the controller first (it is stopped last)."""
        pids = {**self._adopted, **{n: p.pid for n, p in self.procs.items()}}
        order = ["slurmctld", *self.agents]
        names = [n for n in order if n in pids] + [n for n in pids if n not in order]
        (self.dir / "pids").write_text("".join(f"{n} {pids[n]}\n" for n in names))

    def resume(self, timeout: float = 30.0, running: dict[str, int] | None = None) -> "LocalCluster":
        """Start again the daemons of the cluster recorded in ``dir`` that are not ``running``
        (name -> pid), with its own slurm.conf, key and port: tokens already handed out stay
        valid, and the controller reloads its saved jobs and nodes as after any restart.
        Returns once every node's agent has registered (not once all are idle: restored jobs
        may hold them)."""
        from minislurm.common.auth import load_key
        self.port = int(self.config.other["SlurmctldPort"])
        self._adopted = dict(running or {})
        for sub in ("state", "log", "tokens", "bin", "spool"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        if not (self.dir / "tokens" / self.user).exists():
            self._write_token(load_key(self.key_path))
        self._write_shims()
        if "slurmctld" not in self._adopted:
            self._spawn_controller()
            self._write_pids()
        self.wait_controller(timeout)
        for unit in self.agents:
            if unit not in self._adopted:
                self._spawn_agent(unit)
        self._write_pids()
        api = self.client()
        wait_for(lambda: all(n["addr"] and "NOT_RESPONDING" not in n["flags"]
                             for n in api.call("GET", "/nodes")["nodes"]),
                 timeout, "every node's agent to register")
        return self

    def start_node(self, name: str) -> None:
        """Boot a node's agent again (after :meth:`kill_node`); it registers by itself."""
        unit = self.host_of[name]
        if len(self.agents[unit]) > 1:
            return self.restore_node(name)
        if unit in self.procs:
            raise RuntimeError(f"the agent of {name} is running")
        self._spawn_agent(unit)

    def fail_node(self, name: str, fault: str | None) -> None:
        """A virtual node crashes (``crashed``), is cut off the network (``cut``), or comes back
        (None), while the other nodes of its process run on (:mod:`minislurm.slurmd.host`)."""
        unit = self.host_of[name]
        vnodes.set_fault(self.faults_path, name, fault)
        pid = self.procs[unit].pid if unit in self.procs else self._adopted.get(unit)
        if pid:
            vnodes.tell(pid)

    def crash_node(self, name: str) -> None:
        self.fail_node(name, "crashed")

    def restore_node(self, name: str) -> None:
        self.fail_node(name, None)

    def restart_controller(self, timeout: float = 30.0, pause: float = 0.0, *, crash: bool = False,
                           env: dict | None = None) -> None:
        """Stop the controller alone (as ``systemctl restart slurmctld`` would; with ``crash``,
        SIGKILL, as a power cut would) and, ``pause`` seconds later, start it again on the same
        state, with ``env`` added to its environment; agents and jobs keep running."""
        proc = self.procs.pop("slurmctld")
        stop_process(proc.pid, grace=0 if crash else 5.0, alive=lambda: proc.poll() is None)
        proc.wait(timeout=10)
        time.sleep(pause)
        self._controller_env = env or {}
        self._spawn_controller()
        self.procs = {"slurmctld": self.procs.pop("slurmctld"), **self.procs}  # stopped last by down()
        self._write_pids()
        self.wait_controller(timeout)

    def client(self, token: str | None = None) -> Client:
        """A client with this cluster's token for its user (never a ``$SLURM_JWT`` here: that is
        another cluster's, when this one runs inside a job of it, as a lab in a hub session)."""
        own = self.dir / "tokens" / self.user
        return Client(self.conf_path, token or (own.read_text().strip() if own.exists() else None), patience=0)

    def slurm_conf(self) -> str:
        return self.conf_path.read_text()

    def _controller_gone(self) -> str | None:
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is not None:
            return f"slurmctld exited; see {self.dir / 'log' / 'slurmctld.log'}"
        return None

    def save_logs(self, folder: Path) -> None:
        shutil.copytree(self.dir / "log", folder, dirs_exist_ok=True)

    def workdir(self, name: str = "work") -> Path:
        """``name`` beside the cluster's folder: every "node" is this machine, so any folder will do."""
        folder = self.dir.parent / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def describe(self) -> str:
        gpus = {n.gpus for n in self.config.nodes}
        shape = shape_text(len(self.config.nodes), gpus.pop()) if len(gpus) == 1 else f"{len(self.config.nodes)} nodes"
        where = "each in its own network namespace" if self.netns else "on this machine"
        return f"a local cluster: {shape}, the controller and node agents as processes {where}"

    def run(self, *argv: str, input: str | None = None, check: bool = False, timeout: float = 120,
            env: dict | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
        full_env = {**self.env(), **(env or {})}
        return subprocess.run([str(self.dir / "bin" / argv[0]), *argv[1:]], input=input, text=True,
                              capture_output=True, check=check, timeout=timeout, env=full_env, cwd=cwd)

    def kill_node(self, name: str) -> None:
        unit = self.host_of[name]
        if len(self.agents[unit]) > 1:
            return self.crash_node(name)
        proc = self.procs.pop(unit)
        stop_process(proc.pid, grace=0, alive=lambda: proc.poll() is None)
        proc.wait(timeout=10)
        self._write_pids()

    def down(self) -> None:
        for name, proc in reversed(list(self.procs.items())):
            stop_process(proc.pid, alive=lambda: proc.poll() is None)
            proc.wait(timeout=10)
        self.procs.clear()
        if self._net:
            self._net.destroy()
            self._net = None
            (self.dir / "netns").unlink(missing_ok=True)
