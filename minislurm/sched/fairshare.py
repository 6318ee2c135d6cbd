"""Fair share: usage decayed with PriorityDecayHalfLife, and the fair-share factor per user.

Usage is charged in allocated CPU-seconds (Slurm's default billing) and halves every
``half_life`` seconds.  Two factor algorithms, as in Slurm:

* Fair Tree (the default): at each level of the tree siblings are ordered by
  ``LF = shares / usage`` (both as fractions of the siblings'), users are ranked by a
  depth-first walk, and the factor is ``rank / number_of_users`` (best user = 1.0).
* classic (``PriorityFlags=NO_FAIR_TREE``): ``F = 2 ** (-effective_usage / normalised_shares)``,
  0.5 meaning "used exactly my share".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from minislurm.core.accounts import Association, AssociationTree

Key = tuple[str, str | None]


class UsageLedger:
    """Decayed usage per association; charging a user also charges every account above it."""

    def __init__(self, tree: AssociationTree, half_life: float):
        self.tree, self.half_life = tree, half_life
        self._usage: dict[Key, float] = {}
        self._as_of = 0.0

    def decay_to(self, now: float) -> None:
        if now <= self._as_of:
            return
        if self.half_life and self.half_life != math.inf:
            f = 0.5 ** ((now - self._as_of) / self.half_life)
            for k in self._usage:
                self._usage[k] *= f
        self._as_of = now

    def at(self, now: float) -> "UsageLedger":
        """The usage as it stands at ``now`` (decayed), in a new ledger: reading it never
        changes this one, so a look at t=10,000 leaves what a later look at t=100 sees."""
        view = UsageLedger(self.tree, self.half_life)
        view._usage, view._as_of = dict(self._usage), self._as_of
        view.decay_to(now)
        return view

    def charge(self, user: str, account: str, amount: float, now: float) -> None:
        self.decay_to(now)
        assoc: Association | None = self.tree.user(user, account)
        while assoc is not None:
            self._usage[assoc.key] = self._usage.get(assoc.key, 0.0) + amount
            assoc = self.tree.nodes.get((assoc.parent, None)) if assoc.parent else None

    def usage(self, key: Key) -> float:
        return self._usage.get(key, 0.0)


@dataclass(frozen=True)
class ShareRow:
    """One line of sshare: raw and normalised shares and usage, and the factor."""

    account: str
    user: str | None
    raw_shares: int
    norm_shares: float
    raw_usage: float
    effective_usage: float
    fairshare: float
    norm_usage: float = 0.0  # usage as a fraction of the whole cluster's (sshare -l)
    level_fs: float = math.nan  # Fair Tree's S / U against the siblings (sshare -l); classic: none


def _norm_shares(tree: AssociationTree, a: Association) -> float:
    share = 1.0
    while a.parent is not None:
        siblings = tree.nodes[(a.parent, None)].children
        share *= a.shares / (sum(s.shares for s in siblings) or 1)
        a = tree.nodes[(a.parent, None)]
    return share


def _level_shares(tree: AssociationTree, a: Association) -> float:
    """Fair Tree's S: shares as a fraction of the association's own siblings'."""
    total = sum(s.shares for s in tree.nodes[(a.parent, None)].children)
    return a.shares / total if total else 0.0


def _parent_usage(tree: AssociationTree, ledger: UsageLedger, a: Association) -> float:
    """Fair Tree's U (sshare's Effectv Usage): usage as a fraction of the parent's."""
    parent = ledger.usage((a.parent, None))
    return ledger.usage(a.key) / parent if parent else 0.0


def _classic_effective(tree: AssociationTree, ledger: UsageLedger) -> dict[Key, float]:
    """Classic effective usage UE of every association."""
    total = ledger.usage(tree.root.key) or 0.0
    effective: dict[Key, float] = {tree.root.key: 1.0}

    def walk(parent: Association) -> None:
        all_shares = sum(c.shares for c in parent.children)
        for child in parent.children:
            actual = ledger.usage(child.key) / total if total else 0.0
            if parent is tree.root:  # Slurm: just under root, effective usage = actual usage
                effective[child.key] = actual
            elif not all_shares:  # Slurm: no shares among the siblings -> the parent's UE
                effective[child.key] = effective[parent.key]
            else:
                effective[child.key] = actual + (effective[parent.key] - actual) * child.shares / all_shares
            walk(child)

    walk(tree.root)
    return effective


def _classic(tree: AssociationTree, ledger: UsageLedger) -> dict[Key, float]:
    effective = _classic_effective(tree, ledger)
    factors: dict[Key, float] = {}
    for a in tree.users():
        s = _norm_shares(tree, a)
        factors[a.key] = 2 ** (-effective[a.key] / s) if s else 0.0
    return factors


def _fair_tree(tree: AssociationTree, ledger: UsageLedger) -> dict[Key, float]:
    """Slurm's fair_tree.c: rank users depth-first, siblings in decreasing LF = S / U.

    S and U are always taken against an association's own parent and siblings (also when
    tied accounts have their children merged).  Ties: sibling users with equal LF share a
    rank; a user tied with a sibling account shares the rank of that account's best user
    (users sort before accounts on equal LF); tied accounts have their children merged.
    """
    count = len(tree.users())
    factors: dict[Key, float] = {}
    rank = rnt = count  # the current rank, and the rank it would be without ties

    def level_fs(a: Association) -> float:
        s, u = _level_shares(tree, a), _parent_usage(tree, ledger, a)
        if s == 0:  # Slurm: no shares -> the lowest LF, whatever the usage
            return 0.0
        return math.inf if u == 0 else s / u

    def walk(siblings: list[Association], account_tied: bool) -> None:
        nonlocal rank, rnt
        lf = {a.key: level_fs(a) for a in siblings}
        order = sorted(siblings, key=lambda a: (-lf[a.key], a.user is None))
        prev: float | None = None
        i = 0
        while i < len(order):
            a = order[i]
            tied = account_tied if i == 0 else lf[a.key] == prev
            if a.user is not None:
                if not tied:
                    rank = rnt
                factors[a.key] = rank / count
                rnt -= 1
                i += 1
            else:
                j = i + 1
                while j < len(order) and order[j].user is None and lf[order[j].key] == lf[a.key]:
                    j += 1
                walk([c for acc in order[i:j] for c in acc.children], tied)
                i = j
            prev = lf[a.key]

    walk(tree.root.children, False)
    return factors


def factors(tree: AssociationTree, ledger: UsageLedger, now: float, fair_tree: bool = True) -> dict[Key, float]:
    """The fair-share factor in [0, 1] of every user association, from the usage at ``now``."""
    return _factors(tree, ledger.at(now), fair_tree)


def _factors(tree: AssociationTree, ledger: UsageLedger, fair_tree: bool) -> dict[Key, float]:
    return _fair_tree(tree, ledger) if fair_tree else _classic(tree, ledger)


def share_rows(tree: AssociationTree, ledger: UsageLedger, now: float, fair_tree: bool = True) -> list[ShareRow]:
    """What ``sshare -a`` shows at ``now``, in tree order."""
    ledger = ledger.at(now)
    f = _factors(tree, ledger, fair_tree)
    # As Slurm's sshare: with Fair Tree, Norm Shares is S against the siblings and Effectv
    # Usage is usage / parent's usage; classic shows the product of shares and UE.
    effective = None if fair_tree else _classic_effective(tree, ledger)
    rows: list[ShareRow] = []

    total = ledger.usage(tree.root.key)

    def walk(a: Association) -> None:
        for c in a.children:
            level = math.nan
            if effective is None:
                norm, eff = _level_shares(tree, c), _parent_usage(tree, ledger, c)
                level = 0.0 if norm == 0 else math.inf if eff == 0 else norm / eff
            else:
                norm, eff = _norm_shares(tree, c), effective[c.key]
            rows.append(ShareRow(c.account, c.user, c.shares, norm, ledger.usage(c.key), eff,
                                 f.get(c.key, math.nan), ledger.usage(c.key) / total if total else 0.0, level))
            walk(c)

    walk(tree.root)
    return rows
