"""The class's passwords: what a student types at the JupyterHub login page.

The instructor sets them in the roster CSV that ``minislurm cluster add-users --file
students.csv`` reads; only a hash of each is kept, in ``passwords`` beside the cluster's
``passwd`` and ``shadow`` on the users volume, readable by root alone.  The hub (root in its
container) checks a login against it (:mod:`minislurm.cluster.hub`).  They are the hub's
passwords, not Unix ones: shadow keeps ``*``, so nobody logs in to a container with them.

A hash is scrypt (memory-hard, in Python's standard library) with a salt of its own, in one
line per user: ``name:scrypt$n$r$p$salt$hash`` (base64).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import io
import os
from pathlib import Path

N, R, P = 2**14, 8, 1  # scrypt's cost: about 16 MiB and a few tens of ms per check
MIN_LENGTH = 8


class PasswordError(ValueError):
    pass


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def hash_password(password: str, salt: bytes | None = None) -> str:
    salt = salt or os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=N, r=R, p=P, dklen=32)
    return f"scrypt${N}${R}${P}${_b64(salt)}${_b64(digest)}"


def verify(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        got = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
                             dklen=len(base64.b64decode(digest)))
    except ValueError:
        return False
    return hmac.compare_digest(got, base64.b64decode(digest))


def read(path: Path) -> dict[str, str]:
    """name -> stored hash (none: an empty table)."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    return dict(line.split(":", 1) for line in lines if ":" in line)


def check(name: str, password: str, path: Path) -> bool:
    """Whether ``password`` is ``name``'s (a user with none set never logs in)."""
    stored = read(path).get(name)
    return stored is not None and verify(password, stored)


def check_strength(name: str, password: str) -> None:
    if len(password) < MIN_LENGTH:
        raise PasswordError(f"the password of {name} is shorter than {MIN_LENGTH} characters")
    if "\n" in password or "\r" in password:  # a quoted CSV cell may hold one; a login form never does
        raise PasswordError(f"the password of {name} has a line break")


def set_passwords(new: dict[str, str], path: Path) -> None:
    """Hash and store each name's password, replacing an older one (the caller holds the users'
    lock).  The file is replaced whole, root's alone."""
    for name, password in new.items():
        check_strength(name, password)
    table = read(path)
    table.update((name, hash_password(password)) for name, password in new.items())
    tmp = path.with_name(f".{path.name}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("".join(f"{name}:{stored}\n" for name, stored in table.items()))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


NAME_COLUMNS = ("user", "username", "name", "login")


def read_roster(text: str) -> list[tuple[str, str]]:
    """The instructor's CSV: a header naming a ``user`` column (or username, name, login) and a
    ``password`` column, then one row per student; an optional ``uid`` column fixes their uid.
    Returns ``(NAME[:UID], password)`` per row, in order; a password too short is refused here,
    before any account is made."""
    rows = csv.DictReader(io.StringIO(text))
    header = {(h or "").strip().lower(): h for h in rows.fieldnames or []}
    name_col = next((header[c] for c in NAME_COLUMNS if c in header), None)
    if name_col is None or "password" not in header:
        raise PasswordError(f"the CSV needs a header with a user column ({', '.join(NAME_COLUMNS)}) and a "
                            f"password column; it has {', '.join(rows.fieldnames or []) or 'none'}")
    out = []
    for row in rows:
        name = (row.get(name_col) or "").strip()
        if not name:
            continue
        uid = (row.get(header["uid"]) or "").strip() if "uid" in header else ""
        password = row.get(header["password"]) or ""
        if not password:
            raise PasswordError(f"line {rows.line_num}: {name} has no password")
        check_strength(name, password)
        out.append((f"{name}:{uid}" if uid else name, password))
    return out
