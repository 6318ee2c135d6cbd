"""Running a tool's session script with the client virtualenv against a live cluster."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from minislurm.cluster.local import LocalCluster


def run_session(python: Path, script: str, cluster, *args: str, timeout: float = 240,
                prefix: list[str] = ()) -> dict:
    """Run ``tests/clients/SCRIPT ARGS`` with the client virtualenv against ``cluster``; the
    JSON object it prints last.  ``prefix``: words the command runs under (see
    :meth:`InstalledCluster.installed`)."""
    env = cluster.c.env()
    env["PATH"] = os.pathsep.join([str(cluster.c.dir / "bin"), str(python.parent), "/usr/bin", "/bin"])
    r = subprocess.run([*prefix, str(python), str(Path(__file__).parent / script), *args], env=env,
                       cwd=str(cluster.work),
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{script} {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


class InstalledCluster(LocalCluster):
    """A local cluster as if installed on its machines: node names resolve (127.0.0.1) and its
    commands are in /usr/local/bin, where real Slurm's are, each carrying its cluster (a
    ``--system`` cluster's shims).  So a tool that reaches a peer by its node name (torchrun's
    rendezvous at ``$SLURM_JOB_NODELIST_HET_GROUP_0``) or runs ``sbatch`` with no PATH and no
    SLURM_CONF (JupyterHub's spawners) finds what it would on a real cluster.  Each agent, and
    a session run with ``prefix=cluster.installed()``, runs in a mount namespace of its own where
    /etc/hosts also names the nodes and /usr/local/bin shows the commands over what is there;
    the host's files are not touched.  Needs root (unshare, mount)."""

    def installed(self) -> list[str]:
        """The words that run a command in such a mount namespace."""
        hosts = self.dir / "hosts"
        if not hosts.exists():
            own = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else "127.0.0.1 localhost\n"
            hosts.write_text(own.rstrip("\n") + "\n127.0.0.1 " + " ".join(n.name for n in self.config.nodes) + "\n")
        mounts = ('mount --bind "$0" /etc/hosts && '
                  'mount -t overlay overlay -o lowerdir="$1":/usr/local/bin /usr/local/bin && shift && exec "$@"')
        return ["unshare", "--mount", "sh", "-c", mounts, str(hosts), str(self.dir / "bin")]

    def _spawn(self, name: str, argv: list[str], netns=None, hostname=None, env=None) -> None:
        if name.startswith("slurmd-"):
            argv = [*self.installed(), *argv]
        super()._spawn(name, argv, netns=netns, hostname=hostname, env=env)
