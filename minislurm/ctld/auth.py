"""Authentication modelled on Slurm's JWT mode (``AuthAltTypes=auth/jwt``).

One cluster key (HS256), created by ``cluster up`` with mode 0600, signs every token.
A user token carries the user name in the ``sun`` claim, as Slurm's do; a node agent proves
itself with a node credential (``node`` claim) signed with the same key, the way every
slurmd shares the munge key.  Step credentials let srun launch tasks on the agents of its
allocation without asking the controller each time.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import jwt

ALGORITHM = "HS256"
DEFAULT_LIFESPAN = 1800  # seconds, Slurm's default for `scontrol token`


class AuthError(Exception):
    pass


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

    def _sign(self, claims: dict, lifespan: float) -> str:
        now = int(time.time())
        return jwt.encode({**claims, "iat": now, "exp": now + int(lifespan)}, self.key, algorithm=ALGORITHM)

    def user_token(self, user: str, lifespan: float = DEFAULT_LIFESPAN) -> str:
        return self._sign({"sun": user}, lifespan)

    def node_token(self, node: str, lifespan: float = 365 * 86400) -> str:
        return self._sign({"node": node}, lifespan)

    def step_credential(self, job_id: int, step_id: int, incarnation: int, nodes: list[str], user: str,
                        lifespan: float = 86400) -> str:
        return self._sign({"job": job_id, "step": step_id, "inc": incarnation, "nodes": nodes, "sun": user},
                          lifespan)

    def verify(self, token: str) -> dict:
        try:
            return jwt.decode(token, self.key, algorithms=[ALGORITHM])
        except jwt.ExpiredSignatureError:
            raise AuthError("Expired JWT token") from None
        except jwt.InvalidTokenError:
            raise AuthError("Invalid JWT token") from None
