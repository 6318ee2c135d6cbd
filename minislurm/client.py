"""The commands' way to the controller: find it, authenticate, call the API.

Every command pays for what it imports before it can do anything, and ``sbatch`` should take
a few tens of milliseconds, so this speaks the little HTTP/1.1 it needs over a plain socket
(a JSON body with Content-Length, keep-alive) instead of importing http.client, which pulls in
the email and ssl packages.
The controller is found through ``$SLURM_CONF`` (else ``~/.minislurm/cluster/slurm.conf``, else
``/etc/slurm/slurm.conf``):
its ``SlurmctldHost=name(addr)`` and ``SlurmctldPort``.  As Slurm's commands do, a client that
cannot connect tries again once a second for ``MessageTimeout`` seconds (10 unless slurm.conf
says otherwise), so a command typed while the controller restarts waits for it.  The token is
``$SLURM_JWT``, else the file ``tokens/<user>`` beside slurm.conf, which ``minislurm cluster up``
writes for its user.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
import time

# Paths are plain strings here (any os.PathLike is taken): every command imports this module,
# and pathlib would cost each about 3 ms of CPU at start-up.
DEFAULT_DIR = os.path.join(os.path.expanduser("~"), ".minislurm", "cluster")
PREFIX = "/api/v1"
MESSAGE_TIMEOUT = 10.0  # slurm.conf's MessageTimeout default


class ClientError(Exception):
    """A refused request; ``str()`` is Slurm's message."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


SYSTEM_CONF = "/etc/slurm/slurm.conf"  # where Slurm's commands look without $SLURM_CONF


def conf_path() -> str:
    """``$SLURM_CONF``, else the user's own cluster, else the machine's (``/etc/slurm``, as a
    docker cluster's login node has it): a tool that starts commands with a cleaned
    environment still finds the cluster, as it finds a real Slurm's."""
    if os.environ.get("SLURM_CONF"):
        return os.environ["SLURM_CONF"]
    own = os.path.join(DEFAULT_DIR, "slurm.conf")
    return SYSTEM_CONF if not os.path.exists(own) and os.path.exists(SYSTEM_CONF) else own


def _read_conf(path: str | os.PathLike) -> dict[str, str]:
    """The few keys a client needs, without the full slurm.conf parser."""
    keys: dict[str, str] = {}
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        raise ClientError(f"Unable to contact slurm controller (no slurm.conf at {path}; "
                          "start a cluster with `minislurm cluster up` or set SLURM_CONF)") from None
    for line in text.splitlines():
        m = re.match(r"\s*(SlurmctldHost|SlurmctldPort|MessageTimeout)\s*=\s*(\S+)", line, re.IGNORECASE)
        if m and m.group(1).lower() not in keys:
            keys[m.group(1).lower()] = m.group(2)
    return keys


def controller_address(path: str | os.PathLike | None = None) -> tuple[str, int]:
    return _controller(_read_conf(path or conf_path()))


def controller_name(path: str | os.PathLike | None = None) -> str:
    """The controller's host name as SlurmctldHost gives it (``name`` of ``name(addr)``)."""
    return _read_conf(path or conf_path()).get("slurmctldhost", "localhost").split("(")[0]


def _controller(keys: dict[str, str]) -> tuple[str, int]:
    m = re.fullmatch(r"([^()]+)(?:\(([^()]+)\))?", keys.get("slurmctldhost", "localhost"))
    host = (m.group(2) or m.group(1)) if m else "localhost"
    return host, int(keys.get("slurmctldport", "6817").split("-")[0])


def find_token(path: str | os.PathLike | None = None) -> str | None:
    token = os.environ.get("SLURM_JWT")
    if token:
        return token
    try:
        with open(os.path.join(os.path.dirname(path or conf_path()), "tokens", getpass.getuser())) as f:
            return f.read().strip()
    except OSError:
        return None


def outlive_own_stop() -> None:
    """Called by a command about to stop jobs (scancel, scontrol requeue).  Inside a job it may
    stop its own: the controller answers, then the job's processes get SIGTERM, this command
    among them.  Slurm's C commands exit microseconds after the answer; a Python one needs tens
    of milliseconds to exit, time enough for that SIGTERM to kill it before it reports what it
    was told (exit 143, not 0: submitit then records a failed job).  So inside a job SIGTERM is
    blocked for the rest of the command: one that comes dies with the process, as if it had come
    after its exit.  (SIGINT and SIGKILL still stop it; KillWait's SIGKILL follows a SIGTERM.)"""
    if os.environ.get("SLURM_JOB_ID"):
        import signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


def umask_text() -> str:
    """The caller's umask as sbatch and srun export it (``SLURM_UMASK``): the job's files are
    created with it, not with the agent's."""
    mask = os.umask(0o022)
    os.umask(mask)
    return f"{mask:04o}"


def quote(text: str) -> str:
    """Percent-encoded, for a query value or one segment of a path (a reservation's name)."""
    # surrogateescape: a word typed in another encoding (``squeue -u $'\xff'``) goes as its bytes
    return "".join(c if c.isalnum() or c in "-._~" else
                   "".join(f"%{b:02X}" for b in c.encode(errors="surrogateescape")) for c in str(text))


class Client:
    """``patience``: seconds to keep trying to connect (None: MessageTimeout from slurm.conf);
    the cluster's own tools, which poll, pass 0."""

    def __init__(self, conf: str | os.PathLike | None = None, token: str | None = None, timeout: float = 60.0,
                 patience: float | None = None):
        self.conf = conf or conf_path()
        self._address: tuple[str, int] | None = None  # read on the first call, whose error path reports it
        self.token = token or find_token(self.conf)
        self.timeout = timeout
        self.patience = patience
        self._conn: Connection | None = None

    @property
    def address(self) -> tuple[str, int]:
        if self._address is None:
            keys = _read_conf(self.conf)
            self._address = _controller(keys)
            if self.patience is None:
                try:
                    self.patience = float(keys.get("messagetimeout", MESSAGE_TIMEOUT))
                except ValueError:
                    self.patience = MESSAGE_TIMEOUT
        return self._address

    def _connect(self) -> Connection:
        if self._conn is None:
            address = self.address
            deadline = time.monotonic() + (self.patience or 0.0)
            while True:
                try:
                    self._conn = Connection(address, self.timeout)
                    break
                except OSError:  # nothing was sent, so trying again cannot do anything twice
                    if time.monotonic() + 1.0 > deadline:
                        raise
                    time.sleep(1.0)
        return self._conn

    def _exchange(self, method: str, target: str, data: bytes, headers: list[str],
                  timeout: float | None) -> tuple[int, bytes]:
        conn = self._connect()
        conn.sock.settimeout(timeout or self.timeout)
        conn.send(method, target, data, *headers)
        status, reply_headers = conn.reply()
        body = conn.body(reply_headers)
        if reply_headers.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def cluster_name(self) -> str | None:
        """The ClusterName the controller answers pings with (sacct -M, the --json documents)."""
        try:
            return self.call("GET", "/ping").get("cluster")
        except ClientError:  # what asked for it is still whole without it
            return None

    def call(self, method: str, path: str, body: dict | None = None, query: dict | None = None,
             timeout: float | None = None) -> dict:
        url = PREFIX + path
        if query:
            pairs = [f"{quote(k)}={quote(v)}" for k, v in query.items() if v is not None]
            url += "?" + "&".join(pairs) if pairs else ""
        data = json.dumps(body).encode() if body is not None else b""
        headers = [f"Authorization: Bearer {self.token}"] if self.token else []
        for attempt in (1, 2):  # a kept-alive connection the server had closed is retried once
            reused = self._conn is not None
            try:
                status, payload = self._exchange(method, url, data, headers, timeout)
                break
            except (OSError, ValueError, IndexError) as exc:
                self.close()
                if attempt == 2 or not reused or isinstance(exc, TimeoutError):
                    raise ClientError("Unable to contact slurm controller (connect failure)") from None
        try:
            reply = json.loads(payload) if payload else {}
        except ValueError:
            raise ClientError(f"Unexpected reply from the controller (HTTP {status})", status) from None
        if status >= 400:
            raise ClientError(reply.get("error", f"HTTP {status}"), status)
        return reply

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Connection:
    """One HTTP/1.1 connection over a plain socket: the little of http.client that the commands
    need.  A request carries a JSON body; its reply is read whole (Content-Length or chunked)
    or line by line as it comes (srun reads its tasks' output from an agent so)."""

    def __init__(self, address: tuple[str, int], timeout: float | None):
        self.address = address
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""

    def send(self, method: str, target: str, data: bytes, *headers: str) -> None:
        host, port = self.address
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(data)}",
                 "Content-Type: application/json", *headers]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)

    def reply(self) -> tuple[int, dict[str, str]]:
        """The reply's status and headers (names in lower case)."""
        head = self._read_until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
        return int(head[0].split()[1]), headers

    def body(self, headers: dict[str, str]) -> bytes:
        return b"".join(self._body_parts(headers))

    def lines(self, headers: dict[str, str]):
        """The body, a line at a time as it arrives (each with its ``\\n``; the last may lack it)."""
        pending = b""
        for part in self._body_parts(headers):
            pending += part
            *whole, pending = pending.split(b"\n")
            yield from (line + b"\n" for line in whole)
        if pending:
            yield pending

    def _body_parts(self, headers: dict[str, str]):
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while size := int(self._read_until(b"\r\n").split(b";")[0], 16):
                yield self._read_exactly(size)
                self._read_until(b"\r\n")
            self._read_until(b"\r\n")  # after the last chunk
        elif "content-length" in headers or headers.get("connection", "").lower() != "close":
            yield self._read_exactly(int(headers.get("content-length", "0")))
        else:  # up to the close
            yield self._buf
            self._buf = b""
            while chunk := self.sock.recv(65536):
                yield chunk

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self._buf:
            self._buf += self._recv()
        head, _, self._buf = self._buf.partition(marker)
        return head

    def _read_exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._buf += self._recv(max(65536, n - len(self._buf)))
        body, self._buf = self._buf[:n], self._buf[n:]
        return body

    def _recv(self, size: int = 65536) -> bytes:
        chunk = self.sock.recv(size)
        if not chunk:
            raise ConnectionError("connection closed by the other end")
        return chunk

    def close(self) -> None:
        self.sock.close()
