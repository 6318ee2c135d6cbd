"""Accounts and users with fair-share shares: the association tree.

Real Slurm keeps associations in its accounting database (``sacctmgr add account ...``);
minislurm reads them from a small file in slurm.conf's ``Key=Value`` style::

    # Account lines build the tree (Parent defaults to root); User lines hang users on it.
    Account=research Fairshare=60
    Account=eval     Fairshare=40
    User=alice Account=research Fairshare=1
    User=bob   Account=eval
    User=teacher Account=eval AdminLevel=Operator

``Fairshare`` defaults to 1, as in sacctmgr; an Account line may also give sacctmgr's
``Description=`` and ``Organization=`` (quoted if they have spaces).  ``AdminLevel`` (sacctmgr's: None, Operator,
Administrator) lets a user act on everyone's jobs and on nodes, as SlurmUser and root may.
A user's default account (the one a job without ``-A`` is charged to when
``AccountingStorageEnforce=associations``) is their first line's, or the one a
``DefaultAccount=`` on any of their lines names, as sacctmgr's ``DefaultAccount``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field


@dataclass
class Association:
    """One node of the tree: an account (``user is None``) or a user within an account."""

    account: str
    user: str | None = None
    parent: str | None = "root"
    shares: int = 1
    children: list["Association"] = field(default_factory=list)
    admin: str = "None"  # AdminLevel, on user lines
    description: str | None = None  # an account's (sacctmgr shows its name when none is set)
    organization: str | None = None  # an account's (sacctmgr shows its parent's name, or its own)

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.account, self.user)


class AccountsError(ValueError):
    pass


class AssociationTree:
    def __init__(self, root_user: bool = False) -> None:
        """``root_user``: as sacctmgr's ``add cluster`` makes a cluster's tree, with user root in
        account root (one share, an Administrator), a sibling of the top accounts in fair share.
        The controller's trees have it; a lesson's or a replay's have only the users they name."""
        self.root = Association("root", parent=None)
        self.nodes: dict[tuple[str, str | None], Association] = {self.root.key: self.root}
        self.defaults: dict[str, str] = {}  # user -> default account
        if root_user:
            self.add_user("root", "root").admin = "Administrator"

    def add_account(self, name: str, parent: str = "root", shares: int = 1) -> Association:
        if (parent, None) not in self.nodes:
            raise AccountsError(f"parent account '{parent}' of '{name}' does not exist")
        assoc = Association(name, None, parent, shares)
        self.nodes[assoc.key] = assoc
        self.nodes[(parent, None)].children.append(assoc)
        return assoc

    def add_user(self, user: str, account: str, shares: int = 1) -> Association:
        if (account, user) in self.nodes:  # root's, or one read again: its shares are the new ones
            self.nodes[(account, user)].shares = shares
            return self.nodes[(account, user)]
        if (account, None) not in self.nodes:
            self.add_account(account)
        assoc = Association(account, user, account, shares)
        self.nodes[assoc.key] = assoc
        self.nodes[(account, None)].children.append(assoc)
        self.defaults.setdefault(user, account)
        return assoc

    def accounts_of(self, user: str) -> list[str]:
        """The accounts ``user`` is associated with, the default one first."""
        mine = [a.account for a in self.users() if a.user == user]
        default = self.defaults.get(user)
        return ([default] if default in mine else []) + [a for a in mine if a != default]

    def user(self, user: str, account: str) -> Association:
        """The user's association, created with one share on first sight (lessons, traces)."""
        return self.nodes.get((account, user)) or self.add_user(user, account)

    def users(self) -> list[Association]:
        return [a for a in self.nodes.values() if a.user is not None]

    def operators(self) -> set[str]:
        """Users whose AdminLevel is Operator or Administrator (on any of their lines)."""
        return {a.user for a in self.users() if a.admin in ("Operator", "Administrator")}


ADMIN_LEVELS = {"none": "None", "operator": "Operator", "administrator": "Administrator", "admin": "Administrator"}


def parse_accounts(text: str, path: str = "accounts.conf", root_user: bool = False) -> AssociationTree:
    tree = AssociationTree(root_user)
    defaults: dict[str, str] = {}
    read: set[tuple[str, str]] = set()  # the user lines so far
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = {}
        try:
            words = shlex.split(line)
        except ValueError:
            raise AccountsError(f"{path} line {lineno}: unbalanced quotes") from None
        for word in words:
            key, sep, value = word.partition("=")
            if not sep:
                raise AccountsError(f"{path} line {lineno}: expected Key=Value, got '{word}'")
            fields[key.lower()] = value
        try:
            shares = int(fields.get("fairshare", 1))
        except ValueError:
            raise AccountsError(f"{path} line {lineno}: Fairshare must be a whole number") from None
        try:
            if "user" in fields:
                if "account" not in fields:
                    raise AccountsError("User line needs Account=")
                if (fields["account"], fields["user"]) in read:  # sacctmgr refuses these too
                    raise AccountsError(f"user '{fields['user']}' is already in account '{fields['account']}'")
                read.add((fields["account"], fields["user"]))
                level = ADMIN_LEVELS.get(fields.get("adminlevel", "none").lower())
                if level is None:
                    raise AccountsError(f"AdminLevel must be None, Operator or Administrator, "
                                        f"not '{fields['adminlevel']}'")
                tree.add_user(fields["user"], fields["account"], shares).admin = level
                if "defaultaccount" in fields:
                    defaults[fields["user"]] = fields["defaultaccount"]
            elif "account" in fields:
                if (fields["account"], None) in tree.nodes:
                    raise AccountsError(f"account '{fields['account']}' already exists")
                account = tree.add_account(fields["account"], fields.get("parent", "root"), shares)
                account.description = fields.get("description") or None
                account.organization = fields.get("organization") or None
            else:
                raise AccountsError("expected Account= or User=")
        except AccountsError as err:  # every error names its line
            raise AccountsError(f"{path} line {lineno}: {err}") from None
    for user, account in defaults.items():
        if account not in tree.accounts_of(user):  # sacctmgr will not set one the user is not in
            raise AccountsError(f"{path}: DefaultAccount={account} of user '{user}' is not one of their accounts")
        tree.defaults[user] = account
    return tree


HEADER = "# Associations (slurmdbd's, for real Slurm): written by sacctmgr and minislurm cluster add-users"


def _value(text: str) -> str:
    return shlex.quote(text) if not text or any(c.isspace() or c in "'\"#" for c in text) else text


def render_accounts(tree: AssociationTree, header: str = HEADER) -> str:
    """The tree as accounts.conf text, which :func:`parse_accounts` reads back as the same tree:
    accounts parents first, then each user's lines (their default account's first)."""
    lines = [header]
    done = {"root"}
    pending = [a for a in tree.nodes.values() if a.user is None and a.account != "root"]
    while pending:  # parents before children, in the order they were added
        ready = [a for a in pending if a.parent in done] or pending[:1]
        for a in ready:
            words = [f"Account={a.account}"] + ([f"Parent={a.parent}"] if a.parent not in (None, "root") else [])
            words.append(f"Fairshare={a.shares}")
            if a.description:
                words.append(f"Description={_value(a.description)}")
            if a.organization:
                words.append(f"Organization={_value(a.organization)}")
            lines.append(" ".join(words))
            done.add(a.account)
            pending.remove(a)
    by_user: dict[str, list[Association]] = {}
    for a in tree.users():
        by_user.setdefault(a.user, []).append(a)
    for user, assocs in by_user.items():
        default = tree.defaults.get(user)
        assocs.sort(key=lambda a: a.account != default)
        level = max((a.admin for a in assocs), key=("None", "Operator", "Administrator").index)
        for a in assocs:
            words = [f"User={user}", f"Account={a.account}", f"Fairshare={a.shares}"]
            if level != "None":
                words.append(f"AdminLevel={level}")
            lines.append(" ".join(words))
    return "\n".join(lines) + "\n"
