"""JupyterHub as the class's front door: a student logs in, and their notebook server is a Slurm job.

The ``hub`` container of a docker cluster (``minislurm cluster up --docker --hub``) runs
JupyterHub as root, configured by :func:`configure`:

- **Who may log in**: the cluster's users with a password from the instructor's roster
  (:class:`ClusterAuthenticator`; ``minislurm cluster add-users --file students.csv`` sets them).
- **Where a server runs**: batchspawner's ``SlurmSpawner`` submits it with ``sbatch`` *as the
  student* (``runuser``: root in the hub becomes them, so the commands read their own token),
  asks ``squeue`` for its state and node, and ``scancel``s it when the server stops.  The job
  runs ``srun batchspawner-singleuser jupyterhub-singleuser`` on a node, under the student's
  uid, in their home; it tells the hub its port, and the proxy sends the student there.  So
  the labs run where jobs run, and ``squeue`` lists every student's session.
- **What reaches the job**: JupyterHub passes a spawner only the variables in ``env_keep``;
  Slurm's commands need PATH and SLURM_CONF (without them batchspawner's ``sbatch`` is not
  found, or finds no cluster).

The hub is reached at ``hub:8000`` on the cluster's network (published on this host's
127.0.0.1), its API at ``hub:8081``, which the servers on the nodes call.
"""

from __future__ import annotations

import asyncio

from jupyterhub.auth import Authenticator

from minislurm.cluster import passwords, users
from minislurm.cluster.compose import HUB_PORT

HUB_DIR = "/srv/jupyterhub"  # the hub's database and cookie secret (a volume of their own)
API_PORT = 8081


class ClusterAuthenticator(Authenticator):
    """A cluster user with the password the instructor's roster gave them, or nobody."""

    async def authenticate(self, handler, data):
        name, password = data.get("username", ""), data.get("password", "")
        # scrypt takes tens of milliseconds on purpose: off the hub's event loop
        ok = await asyncio.to_thread(passwords.check, name, password, users.PASSWORDS)
        return name if ok else None  # the hub logs a failure


def configure(c) -> None:
    """Everything the hub container's ``jupyterhub_config.py`` sets."""
    c.JupyterHub.bind_url = f"http://0.0.0.0:{HUB_PORT}"
    c.JupyterHub.hub_bind_url = f"http://0.0.0.0:{API_PORT}"
    c.JupyterHub.hub_connect_url = f"http://hub:{API_PORT}"  # as the nodes reach it
    c.JupyterHub.db_url = f"sqlite:///{HUB_DIR}/jupyterhub.sqlite"
    c.JupyterHub.cookie_secret_file = f"{HUB_DIR}/jupyterhub_cookie_secret"
    c.JupyterHub.authenticator_class = ClusterAuthenticator
    c.Authenticator.allow_all = True  # everyone with a password: the roster is the allow list
    c.JupyterHub.spawner_class = "batchspawner.SlurmSpawner"
    c.SlurmSpawner.exec_prefix = "runuser -u {username} --"
    c.SlurmSpawner.env_keep = ["PATH", "SLURM_CONF", "LANG", "JUPYTERHUB_SINGLEUSER_APP"]
    c.SlurmSpawner.req_nprocs = "1"
    c.SlurmSpawner.req_memory = "2G"
    c.SlurmSpawner.req_runtime = "8:00:00"  # a day's class; the job ends with it
    c.SlurmSpawner.start_timeout = 180  # queued behind other jobs, then started
    c.SlurmSpawner.http_timeout = 120
    c.Spawner.default_url = "/lab"
