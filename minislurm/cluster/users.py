"""The users of a docker cluster, the way a real cluster has them from LDAP and NFS.

Every container (controller, nodes, login) looks users up in one ``passwd``, ``group`` and
``shadow`` on a shared volume (root alone reads shadow: it has no passwords, but ``su`` checks
the account there), through glibc's ``extrausers`` NSS module, so a user has the same uid and
gid everywhere the moment they are added: the controller signs that uid into every step
credential, and each agent checks it against its own lookup before starting anything as that
user.  A user also gets a home on the shared /home (with the examples and labs), a token
beside slurm.conf that only they can read (minislurm's commands authenticate with JWT), and an
association in ``accounts.conf`` (account ``default``, one share, as sacctmgr would add it), so
fair share weighs every student alike; an instructor gets ``AdminLevel=Operator``.  The docker
cluster runs with ``AccountingStorageEnforce=associations``: a user's jobs are charged to that
account and ``-A`` of any other is refused; the controller reads the file again when it changes.
A password from the instructor's roster is kept as a hash, for the JupyterHub login
(:mod:`minislurm.cluster.passwords`).

Run as root in the controller container (``minislurm cluster add-users`` does that)::

    python -m minislurm.cluster.users add alice bob              # "alice 1001 added" per user
    python -m minislurm.cluster.users add --operator teacher      # may act on every job and node
    python -m minislurm.cluster.users add --passwords alice < roster  # NAME:PASSWORD lines on stdin
"""

from __future__ import annotations

import fcntl
import grp
import os
import pwd
import re
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from minislurm.cluster import passwords

USERS_DIR = Path("/var/lib/extrausers")  # where libnss-extrausers reads passwd, group and shadow
PASSWORDS = USERS_DIR / "passwords"  # the hub's login passwords, hashed (root's alone)
ETC = Path("/etc/slurm")
HOME = Path("/home")
SKELETON = [Path("/opt/minislurm/examples"), Path("/opt/minislurm/labs")]  # copied into a new home
FIRST_UID = 1000
TOKEN_LIFESPAN = 365 * 86400
NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")  # what useradd accepts by default


class UserError(ValueError):
    pass


@dataclass
class User:
    name: str
    uid: int
    gid: int

    @property
    def home(self) -> Path:
        return HOME / self.name


def _entries(path: Path) -> list[list[str]]:
    try:
        return [line.split(":") for line in path.read_text().splitlines() if line and not line.startswith("#")]
    except FileNotFoundError:
        return []


def users(folder: Path = USERS_DIR) -> list[User]:
    """The cluster's users (not the image's own system accounts)."""
    return [User(e[0], int(e[2]), int(e[3])) for e in _entries(folder / "passwd") if len(e) >= 4]


def _replace(path: Path, text: str, mode: int = 0o644) -> None:
    """Write a whole file at once: a reader sees the old one or the new one, never half."""
    tmp = path.with_name(f".{path.name}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _shadow(folder: Path) -> None:
    """A shadow entry for every user that has none: no password (``*``, the account is entered
    by token, ``docker exec`` or root's ``su``), no aging.  PAM's account check refuses a user
    whose passwd says ``x`` and who has no shadow entry, so ``su - alice`` needs it."""
    path = folder / "shadow"
    lines = path.read_text().splitlines() if path.exists() else []
    have = {line.split(":", 1)[0] for line in lines}
    missing = [f"{u.name}:*:::::::" for u in users(folder) if u.name not in have]
    if missing or not path.exists():
        _replace(path, "".join(f"{line}\n" for line in lines + missing), 0o600)


@contextmanager
def _locked(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _image_accounts() -> tuple[set[str], set[int], set[int]]:
    """The names, uids and gids known here: the image's own and the cluster's (NSS reads both)."""
    accounts = pwd.getpwall()
    return {p.pw_name for p in accounts}, {p.pw_uid for p in accounts}, {g.gr_gid for g in grp.getgrall()}


def add(name: str, uid: int | None = None, *, folder: Path = USERS_DIR) -> tuple[User, bool]:
    """The user ``name`` in the shared passwd and group (their own group, gid = uid); returns
    it and whether it is new.  An existing user is left as is (asking for another uid fails)."""
    if not NAME.fullmatch(name):
        raise UserError(f"invalid user name {name!r} (lower-case letters, digits, - and _; at most 32)")
    with _locked(folder):
        for user in users(folder):
            if user.name == name:
                if uid is not None and uid != user.uid:
                    raise UserError(f"user {name} exists with uid {user.uid}, not {uid}")
                _shadow(folder)  # a user of an older image has none
                return user, False
        names, uids, gids = _image_accounts()
        if name in names:
            raise UserError(f"{name} is a system account of the image")
        ours = users(folder)  # NSS reads them too, in the containers; not where tests run
        uids |= {u.uid for u in ours}
        gids |= {u.gid for u in ours}
        if uid is None:
            uid = next(i for i in range(FIRST_UID, 60000) if i not in uids and i not in gids)
        elif uid in uids or uid in gids or not 0 < uid < 60000:
            raise UserError(f"uid {uid} is taken or out of range")
        passwd, group = folder / "passwd", folder / "group"
        old_p = passwd.read_text() if passwd.exists() else ""
        old_g = group.read_text() if group.exists() else ""
        _replace(group, old_g + f"{name}:x:{uid}:\n")
        _replace(passwd, old_p + f"{name}:x:{uid}:{uid}:{name}:{HOME / name}:/bin/bash\n")
        _shadow(folder)
        return User(name, uid, uid), True


def make_home(user: User, skeleton: list[Path] = SKELETON) -> None:
    """``/home/<name>`` with the examples and labs, unless it exists (then it is the user's and
    root leaves it alone).  Filled while root alone may enter it, then handed to the user."""
    try:
        os.mkdir(user.home, 0o700)
    except FileExistsError:
        return
    for src in skeleton:
        if src.is_dir():
            shutil.copytree(src, user.home / src.name, symlinks=True)
    for folder, dirs, files in os.walk(user.home):
        for entry in [*dirs, *files]:
            os.lchown(os.path.join(folder, entry), user.uid, user.gid)
    os.chown(user.home, user.uid, user.gid)


def write_token(user: User, tokens: Path | None = None, key_file: Path | None = None) -> Path:
    """``tokens/<name>`` beside slurm.conf, readable by the user alone (the commands find it
    there, as ``minislurm cluster up`` writes the local cluster's)."""
    from minislurm.common.auth import Signer, load_key
    tokens = tokens or ETC / "tokens"
    tokens.mkdir(mode=0o755, exist_ok=True)
    token = Signer(load_key(key_file or ETC / "jwt_hs256.key")).user_token(user.name, TOKEN_LIFESPAN)
    path = tokens / user.name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchown(f.fileno(), user.uid, user.gid)
        os.fchmod(f.fileno(), 0o600)
        f.write(token + "\n")
    return path


def associate(user: User, operator: bool = False, accounts: Path | None = None) -> bool:
    """``User=<name> Account=default`` in accounts.conf (with ``AdminLevel=Operator``); True if
    the file changed.  The controller reads it when it starts."""
    accounts = accounts or ETC / "accounts.conf"
    lines = accounts.read_text().splitlines() if accounts.exists() else [
        "# Associations (slurmdbd's, for real Slurm): written by minislurm cluster add-users", "Account=default"]
    words = f"User={user.name} Account=default Fairshare=1" + (" AdminLevel=Operator" if operator else "")
    mine = [i for i, line in enumerate(lines) if line.split()[:1] == [f"User={user.name}"]]
    if mine and (lines[mine[0]] == words or not operator):
        return False
    if mine:
        lines[mine[0]] = words
    else:
        lines.append(words)
    _replace(accounts, "\n".join(lines) + "\n")
    return True


def add_user(name: str, uid: int | None = None, operator: bool = False) -> tuple[User, bool, bool]:
    """Everything a new user of the cluster needs: account, home, token, association; returns
    the user, whether they are new, and whether the controller must reread accounts.conf."""
    user, new = add(name, uid)
    make_home(user)
    write_token(user)
    from minislurm.common.accounts_file import locked
    accounts = ETC / "accounts.conf"
    with _locked(USERS_DIR), locked(accounts):  # the controller writes it too (sacctmgr)
        changed = associate(user, operator, accounts)
    return user, new, changed and operator


def main(argv: list[str]) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m minislurm.cluster.users")
    p.add_argument("action", choices=["add"])
    p.add_argument("--operator", action="store_true", help="AdminLevel=Operator (an instructor)")
    p.add_argument("--passwords", action="store_true",
                   help="read NAME:PASSWORD lines on stdin (never on the command line, which ps shows)")
    p.add_argument("names", nargs="+", metavar="NAME[:UID]")
    args = p.parse_args(argv)
    given = dict(line.split(":", 1) for line in sys.stdin.read().splitlines() if ":" in line) if args.passwords else {}
    status = 0
    for word in args.names:
        name, _, uid = word.partition(":")
        try:
            if name in given:
                passwords.check_strength(name, given[name])  # before the account exists
            user, new, reread = add_user(name, int(uid) if uid else None, args.operator)
            if name in given:
                with _locked(USERS_DIR):
                    passwords.set_passwords({name: given[name]}, PASSWORDS)
        except (UserError, ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
            continue
        print(f"{user.name} {user.uid} {'added' if new else 'exists'}{' reread' if reread else ''}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
