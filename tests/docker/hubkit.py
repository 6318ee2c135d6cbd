"""A student at the docker cluster's JupyterHub, over HTTP as a browser or a script would be.

    s = Student(cluster.hub_url, "alice")
    s.login("correct horse")      # the login form: the password the roster set
    s.start(); s.wait_ready()     # their server: a Slurm job on a node
    out, err = s.run_cell("!sbatch --wrap hostname")   # a cell, through the kernel's websocket
    s.stop()

After the login form the student asks the hub for an API token (POST /hub/api/users/NAME/tokens,
with the form's session cookie and its XSRF header), and uses it for the hub's REST API and
for their own server's (kernels, the websocket), as JupyterLab's own requests carry one.
Shared by tests/docker/test_hub.py and bench/hub.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid

import requests

TIMEOUT = 30


class Student:
    def __init__(self, base: str, name: str):
        self.base, self.name = base.rstrip("/"), name
        self.http = requests.Session()

    # -- the hub --------------------------------------------------------------------------
    def login(self, password: str) -> requests.Response:
        """The login form, as a browser posts it; the answer is not followed (following it would
        start the server: the hub's /hub/spawn)."""
        page = self.http.get(f"{self.base}/hub/login", timeout=TIMEOUT)
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
        return self.http.post(f"{self.base}/hub/login", data={"username": self.name, "password": password,
                                                              "_xsrf": xsrf},
                              allow_redirects=False, timeout=TIMEOUT)

    def use_cookies(self, cookies: list[dict]) -> None:
        """A browser's session (its cookies, as playwright lists them) instead of :meth:`login`."""
        for c in cookies:
            self.http.cookies.set(c["name"], c["value"], domain=c["domain"], path=c["path"])

    def get_token(self) -> str:
        """An API token of the logged-in student's, as the hub's token page makes one."""
        xsrf = self.http.cookies.get("_xsrf", path="/hub/")
        r = self.http.post(f"{self.base}/hub/api/users/{self.name}/tokens", json={"note": "hubkit",
                           "expires_in": 3600}, headers={"X-XSRFToken": xsrf}, timeout=TIMEOUT)
        r.raise_for_status()
        token = r.json()["token"]
        self.http.headers["Authorization"] = f"token {token}"
        return token

    def api(self, method: str, path: str, **kw) -> requests.Response:
        return self.http.request(method, f"{self.base}/hub/api{path}", timeout=TIMEOUT, **kw)

    def server(self) -> dict | None:
        """The default server as the hub reports it (None: not started)."""
        return self.api("GET", f"/users/{self.name}").json()["servers"].get("")

    def start(self) -> int:
        return self.api("POST", f"/users/{self.name}/server").status_code  # 201 started, 202 pending

    def wait_ready(self, timeout: float = 180) -> dict:
        deadline = time.time() + timeout
        while True:
            server = self.server()
            if server and server["ready"]:
                return server
            if server is None:
                raise RuntimeError(f"{self.name}'s server stopped before it was ready")
            if time.time() > deadline:
                raise TimeoutError(f"{self.name}'s server not ready after {timeout} s: {server}")
            time.sleep(0.25)

    def stop(self, timeout: float = 60) -> None:
        self.api("DELETE", f"/users/{self.name}/server")
        deadline = time.time() + timeout
        while self.server() is not None:
            if time.time() > deadline:
                raise TimeoutError(f"{self.name}'s server still there after {timeout} s")
            time.sleep(0.25)

    # -- their server ---------------------------------------------------------------------
    def user_api(self, method: str, path: str, **kw) -> requests.Response:
        return self.http.request(method, f"{self.base}/user/{self.name}/api{path}", timeout=TIMEOUT, **kw)

    def run_cell(self, code: str, timeout: float = 120) -> tuple[str, dict | None]:
        """Run ``code`` in a new kernel of the student's server: (what it printed, the error
        as the notebook shows it or None).  The kernel is shut down after."""
        kernel = self.user_api("POST", "/kernels", json={"name": "python3"})
        kernel.raise_for_status()
        kid = kernel.json()["id"]
        try:
            return asyncio.run(asyncio.wait_for(self._execute(kid, code), timeout))
        finally:
            self.user_api("DELETE", f"/kernels/{kid}")

    async def _execute(self, kid: str, code: str) -> tuple[str, dict | None]:
        import aiohttp
        url = f"{self.base.replace('http', 'ws', 1)}/user/{self.name}/api/kernels/{kid}/channels"
        msg_id, out, error = uuid.uuid4().hex, [], None
        request = {"header": {"msg_id": msg_id, "session": uuid.uuid4().hex, "username": self.name,
                              "msg_type": "execute_request", "version": "5.3"},
                   "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                   "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                               "allow_stdin": False, "stop_on_error": True}}
        headers = {"Authorization": self.http.headers["Authorization"]}
        async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=headers) as ws:
            await ws.send_str(json.dumps(request))
            async for frame in ws:
                msg = json.loads(frame.data)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    out.append(content["text"])
                elif kind in ("execute_result", "display_data"):
                    out.append(content["data"].get("text/plain", "") + "\n")
                elif kind == "error":
                    error = {"ename": content["ename"], "evalue": content["evalue"]}
                elif kind == "status" and content["execution_state"] == "idle":
                    break
        return "".join(out), error
