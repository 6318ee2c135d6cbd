"""The commands' way to the controller: find it, authenticate, call the API.

Kept to the standard library (http.client, json) so that ``sbatch`` starts in milliseconds.
The controller is found through ``$SLURM_CONF`` (else ``~/.minislurm/cluster/slurm.conf``):
its ``SlurmctldHost=name(addr)`` and ``SlurmctldPort``.  The token is ``$SLURM_JWT``, else the
file ``tokens/<user>`` beside slurm.conf, which ``minislurm cluster up`` writes for its user.
"""

from __future__ import annotations

import getpass
import http.client
import json
import os
import re
from pathlib import Path
from urllib.parse import urlencode

DEFAULT_DIR = Path.home() / ".minislurm" / "cluster"
PREFIX = "/api/v1"


class ClientError(Exception):
    """A refused request; ``str()`` is Slurm's message."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


def conf_path() -> Path:
    return Path(os.environ.get("SLURM_CONF") or DEFAULT_DIR / "slurm.conf")


def _read_conf(path: Path) -> dict[str, str]:
    """The few keys a client needs, without the full slurm.conf parser."""
    keys: dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError:
        raise ClientError(f"Unable to contact slurm controller (no slurm.conf at {path}; "
                          "start a cluster with `minislurm cluster up` or set SLURM_CONF)") from None
    for line in text.splitlines():
        m = re.match(r"\s*(SlurmctldHost|SlurmctldPort)\s*=\s*(\S+)", line, re.IGNORECASE)
        if m and m.group(1).lower() not in keys:
            keys[m.group(1).lower()] = m.group(2)
    return keys


def controller_address(path: Path | None = None) -> tuple[str, int]:
    keys = _read_conf(path or conf_path())
    m = re.fullmatch(r"([^()]+)(?:\(([^()]+)\))?", keys.get("slurmctldhost", "localhost"))
    host = (m.group(2) or m.group(1)) if m else "localhost"
    return host, int(keys.get("slurmctldport", "6817").split("-")[0])


def find_token(path: Path | None = None) -> str | None:
    token = os.environ.get("SLURM_JWT")
    if token:
        return token
    try:
        return ((path or conf_path()).parent / "tokens" / getpass.getuser()).read_text().strip()
    except OSError:
        return None


class Client:
    def __init__(self, conf: Path | None = None, token: str | None = None, timeout: float = 60.0):
        self.conf = conf or conf_path()
        self.host, self.port = controller_address(self.conf)
        self.token = token or find_token(self.conf)
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self._conn

    def call(self, method: str, path: str, body: dict | None = None, query: dict | None = None,
             timeout: float | None = None) -> dict:
        url = PREFIX + path + ("?" + urlencode({k: v for k, v in query.items() if v is not None}) if query else "")
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):  # a kept-alive connection the server closed is retried once
            conn = self._connection()
            if timeout is not None:
                conn.timeout = timeout
            try:
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                break
            except (ConnectionError, http.client.HTTPException, TimeoutError, OSError) as exc:
                self.close()
                if attempt == 2 or isinstance(exc, (TimeoutError, ConnectionRefusedError)):
                    raise ClientError(f"Unable to contact slurm controller (connect failure): {exc}") from None
        try:
            reply = json.loads(payload) if payload else {}
        except ValueError:
            raise ClientError(f"Unexpected reply from the controller (HTTP {resp.status})", resp.status) from None
        if resp.status >= 400:
            raise ClientError(reply.get("error", f"HTTP {resp.status}"), resp.status)
        return reply

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
