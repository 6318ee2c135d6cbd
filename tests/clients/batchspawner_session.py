"""What JupyterHub asks of batchspawner's SlurmSpawner, driven without a hub.

    python batchspawner_session.py FOLDER     (run where /usr/local/bin has the cluster's commands)

The spawner runs its commands as a hub would: with JupyterHub's environment for a spawner (no
PATH, no SLURM_CONF), so ``sbatch``, ``squeue`` and ``scancel`` must find the cluster the way
real Slurm's do.  ``start()`` submits SlurmSpawner's own batch script, whose ``srun
batchspawner-singleuser`` reports the server's port to the hub's ``/api/batchspawner`` (a
stand-in answers here as JupyterHub's handler does) and runs a small notebook-server stand-in;
``start()`` returns the host its ``squeue`` query parsed and that port, where the server
answers.  Then ``poll()`` and ``stop()`` (scancel).  Prints one JSON object: what the hub saw.
Nothing here imports minislurm.
"""

import asyncio
import json
import os
import pwd
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from batchspawner import SlurmSpawner
from jupyterhub.objects import Hub

SERVER = '''
import os
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlparse

class Hello(BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{os.environ.get('SLURMD_NODENAME')} {os.environ.get('SLURM_JOB_ID')}".encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

HTTPServer(("0.0.0.0", urlparse(os.environ["JUPYTERHUB_SERVICE_URL"]).port), Hello).serve_forever()
'''


class User:
    """The few things of a hub's user a spawner reads."""

    def __init__(self, name):
        self.name = self.escaped_name = name
        self.url, self.groups = f"/user/{name}/", []

    def progress_url(self, server_name):
        return f"/hub/api/users/{self.name}/server/progress"


class Database:
    def commit(self):
        pass


def hub_api(spawner, token):
    """POST /hub/api/batchspawner as batchspawner's handler takes it: the spawner whose token
    it is gets the values (the port)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            ok = self.path == "/hub/api/batchspawner" and self.headers.get("Authorization") == f"token {token}"
            if ok:
                for key, value in body.items():
                    setattr(spawner, key, value)
            self.send_response(201 if ok else 403)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def reach(url, timeout=60):
    """What the server says once it listens (the wrapper reports the port before the server
    binds it: a hub too waits for the server to answer)."""
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.read().decode()
        except OSError:
            if time.time() > deadline:
                raise
            await asyncio.sleep(0.2)


async def session(folder):
    server_py = os.path.join(folder, "notebook_server.py")
    with open(server_py, "w") as f:
        f.write(SERVER)
    os.chmod(server_py, 0o755)  # the wrapper finds it with shutil.which
    token = "session-token"
    user = User(pwd.getpwuid(os.getuid()).pw_name)
    spawner = SlurmSpawner(user=user, db=Database(), api_token=token, oauth_client_id=f"jupyterhub-user-{user.name}",
                           cmd=[server_py], batchspawner_singleuser_cmd=os.path.join(os.path.dirname(sys.executable),
                                                                                      "batchspawner-singleuser"),
                           exec_prefix="", req_partition="gpu", req_runtime="10", req_homedir=folder,
                           startup_poll_interval=0.2)
    api = hub_api(spawner, token)
    spawner.hub = Hub(ip="127.0.0.1", port=api.server_address[1], base_url="/hub/")
    env = spawner.get_env()
    ip, port = await asyncio.wait_for(spawner.start(), 120)
    job_id = spawner.job_id
    status = spawner.job_status  # the squeue line the spawner parsed
    answer = await reach(f"http://{ip}:{port}/")
    running = await spawner.poll()
    await spawner.stop()
    deadline = time.time() + 30
    while await spawner.poll() is None and time.time() < deadline:
        await asyncio.sleep(0.5)
    stopped = await spawner.poll()
    api.shutdown()
    return {"env_keys": sorted(env), "job_id": job_id, "status": status, "ip": ip, "port": port, "answer": answer,
            "running_poll": running, "stopped_poll": stopped, "job_id_after": spawner.job_id,
            "log": os.path.join(folder, f"jupyterhub_slurmspawner_{job_id}.log")}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(session(sys.argv[1]))))
