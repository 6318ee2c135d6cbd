"""The controller's side of sacctmgr: the associations as rows, and a change committed to accounts.conf.

Real Slurm keeps associations in slurmdbd's database and sends slurmctld each change; here the
controller owns accounts.conf (beside slurm.conf) and is its one writer while it runs.  A change
is planned on the tree as the file holds it now (:func:`minislurm.core.assocedit.plan`), written
whole to a new file that is flushed to disk and renamed over the old one (the folder flushed too),
and only then is the tree the controller enforces (``AccountingStorageEnforce=associations``,
AdminLevel) replaced and the client answered: commit, then tell.  ``cluster add-users`` writes the
same file under the same lock (``.accounts.conf.lock`` beside it).
"""

from __future__ import annotations

from minislurm.common.accounts_file import locked, write_durably
from minislurm.core.accounts import AccountsError, Association, AssociationTree, render_accounts
from minislurm.core.assocedit import plan
from minislurm.core.errors import SlurmError


def _row(a: Association, tree: AssociationTree) -> dict:
    return {"account": a.account, "user": a.user, "parent": a.parent if a.user is None else None,
            "shares": a.shares, "admin": a.admin if a.user else None,
            "default": a.user is not None and tree.defaults.get(a.user) == a.account,
            "description": a.description, "organization": a.organization}


def view(tree: AssociationTree) -> list[dict]:
    """Every association in sacctmgr's order: an account, its users by name, then its
    sub-accounts by name, depth first from root."""
    out = []

    def walk(account: Association) -> None:
        out.append(_row(account, tree))
        users = sorted((c for c in account.children if c.user is not None), key=lambda c: c.user)
        out.extend(_row(u, tree) for u in users)
        for sub in sorted((c for c in account.children if c.user is None), key=lambda c: c.account):
            walk(sub)

    walk(tree.root)
    return out


def change(ctl, words: list[str], commit: bool) -> dict:
    """Plan ``words`` (``add user bob account=ml``) on the controller's tree; with ``commit``
    and something to change, write it and enforce it.  Returns what sacctmgr prints."""
    path = ctl.accounts_file
    if path is None:
        raise SlurmError("This cluster keeps no associations (no accounts.conf)")
    with locked(path):
        tree = ctl.associations()  # read again if add-users changed the file
        try:
            edit = plan(tree, words, ctl.config.cluster_name)
        except AccountsError as exc:
            raise SlurmError(str(exc)) from None
        if commit and edit.changed and not edit.failed:
            write_durably(path, render_accounts(edit.tree))
            ctl.adopt_associations(edit.tree)
    return {"out": edit.out, "err": edit.err, "failed": edit.failed, "changed": edit.changed}
