"""Authentication modelled on Slurm's JWT mode (``AuthAltTypes=auth/jwt``), and job credentials.

One cluster key (HS256), created by ``cluster up`` with mode 0600.  It signs every *token*: a
user token carries the user name in the ``sun`` claim, as Slurm's do; a node agent proves itself
with a node token (``node`` claim) and the controller to the agents with a ``ctld`` one, the way
every Slurm daemon shares the munge key.  Every token must carry ``exp``.

A *step credential* (Slurm's job credential, ``cred/munge``) lets srun start a step's tasks on
the agents of its allocation.  It is signed with a second key derived from the cluster key,
so a credential never verifies as a token (the controller's API refuses it, it cannot mint
tokens) and a token never as a credential.  It binds everything an agent may act on: job id,
incarnation (restart count), step id, user name, uid and gid, the step's nodes, the task ids
and GPU indices on each node, and a short expiry (Slurm's ``cred_expire``, 120 s): it is for
launching, not a lasting right.  What it says of each node (tasks, CPUs, GPUs, address) is
carried compressed: a step on 2,048 nodes would otherwise bring a fifth of a megabyte to every
agent its launch reaches, and there are hundreds of such requests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
import zlib
from pathlib import Path

import jwt

ALGORITHM = "HS256"
DEFAULT_LIFESPAN = 1800  # seconds, Slurm's default for `scontrol token`
CREDENTIAL_LIFESPAN = 120  # seconds, Slurm's default AuthInfo=cred_expire
CREDENTIAL_PURPOSE = "step-launch"
_CREDENTIAL_KEY_LABEL = b"minislurm job credential key v1"


_VERIFIED: dict[tuple[bytes, str], dict] = {}  # (key, token) -> its claims, for tokens verified in this process


class AuthError(Exception):
    pass


class CredentialError(AuthError):
    """A step credential an agent refuses; the message is Slurm's (slurm_errno.c)."""


INVALID_CREDENTIAL = "Invalid job credential"
EXPIRED_CREDENTIAL = "Job credential expired"
REVOKED_CREDENTIAL = "Job credential revoked"
REPLAYED_CREDENTIAL = "Job credential replayed"


def create_key(path: Path) -> bytes:
    """Write a new random cluster key readable by its owner only."""
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    os.chmod(path, 0o600)
    return key


def load_key(path: Path) -> bytes:
    return Path(path).read_bytes()


class Signer:
    def __init__(self, key: bytes):
        self.key = key
        self._cred_key = hmac.new(key, _CREDENTIAL_KEY_LABEL, hashlib.sha256).digest()

    @staticmethod
    def _claims(claims: dict, lifespan: float) -> dict:
        now = int(time.time())
        return {**claims, "iat": now, "exp": now + int(lifespan)}

    def _sign(self, claims: dict, lifespan: float) -> str:
        return jwt.encode(self._claims(claims, lifespan), self.key, algorithm=ALGORITHM)

    def user_token(self, user: str, lifespan: float = DEFAULT_LIFESPAN) -> str:
        return self._sign({"sun": user}, lifespan)

    def node_token(self, node: str, lifespan: float = 365 * 86400) -> str:
        return self._sign({"node": node}, lifespan)

    def ctld_token(self, lifespan: float = 10 * 365 * 86400) -> str:
        """What the controller shows the agents (their launch, signal, terminate and ping routes)."""
        return self._sign({"ctld": True}, lifespan)

    def step_credential(self, *, job_id: int, incarnation: int, step_id: int, user: str, uid: int, gid: int,
                        tasks: dict[str, list[int]], gpus: dict[str, list[int]], cpus: list[int] | None = None,
                        cpus_per_task: int | None = None, lifespan: float = CREDENTIAL_LIFESPAN,
                        addrs: dict[str, str] | None = None) -> str:
        """``tasks``: the step's nodes in order, each with its global task ids; ``gpus`` and
        ``cpus``: what the step holds on each; ``addrs``: where their agents listen (an agent
        passes the launch on to those addresses alone)."""
        per_node = {"nodes": list(tasks), "tasks": [list(t) for t in tasks.values()],
                    "gpus": {n: list(gpus.get(n, [])) for n in tasks}, "cpus": list(cpus) if cpus is not None else None,
                    "addrs": dict(addrs or {})}
        packed = base64.b64encode(zlib.compress(json.dumps(per_node, separators=(",", ":")).encode())).decode()
        claims = {"purpose": CREDENTIAL_PURPOSE, "job": job_id, "inc": incarnation, "step": step_id,
                  "user": user, "uid": uid, "gid": gid, "per_node": packed, "cpus_per_task": cpus_per_task}
        return jwt.encode(self._claims(claims, lifespan), self._cred_key, algorithm=ALGORITHM)

    def verify(self, token: str) -> dict:
        """The claims of a token of this cluster (never of a step credential).  A token verified
        before is known by its text until it expires: the controller shows the agents of one
        process the same token for each of its nodes (a job's end on 2,048 nodes is 2,048
        requests), and a user's command shows it the same token each time."""
        known = _VERIFIED.get((self.key, token))
        if known is not None and known["exp"] > time.time():
            return dict(known)
        try:
            claims = jwt.decode(token, self.key, algorithms=[ALGORITHM], options={"require": ["exp"]})
        except jwt.ExpiredSignatureError:
            raise AuthError("Expired JWT token") from None
        except jwt.InvalidTokenError:
            raise AuthError("Invalid JWT token") from None
        if "purpose" in claims:
            raise AuthError("Invalid JWT token")
        if len(_VERIFIED) >= 1024:
            _VERIFIED.pop(next(iter(_VERIFIED)))
        _VERIFIED[(self.key, token)] = dict(claims)
        return claims

    def verify_credential(self, credential: str, *, check_expiry: bool = True) -> dict:
        """The claims of a step credential; ``check_expiry=False`` for signalling a step that
        already runs (a long step must still take Ctrl-C after its credential expired)."""
        try:
            claims = jwt.decode(credential, self._cred_key, algorithms=[ALGORITHM],
                                options={"require": ["exp", "purpose", "job", "inc", "step", "user", "uid", "gid",
                                                     "per_node"],
                                         "verify_exp": check_expiry})
            # signed, so ours: what it says of each node, unpacked
            claims.update(json.loads(zlib.decompress(base64.b64decode(claims.pop("per_node"), validate=True))))
        except jwt.ExpiredSignatureError:
            raise CredentialError(EXPIRED_CREDENTIAL) from None
        except (jwt.InvalidTokenError, ValueError, TypeError, zlib.error):
            raise CredentialError(INVALID_CREDENTIAL) from None
        if claims["purpose"] != CREDENTIAL_PURPOSE or not all(k in claims for k in ("nodes", "tasks", "gpus")) \
                or len(claims["nodes"]) != len(claims["tasks"]):
            raise CredentialError(INVALID_CREDENTIAL)
        return claims
