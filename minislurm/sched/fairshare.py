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


def _norm_shares(tree: AssociationTree, a: Association) -> float:
    share = 1.0
    while a.parent is not None:
        siblings = tree.nodes[(a.parent, None)].children
        share *= a.shares / (sum(s.shares for s in siblings) or 1)
        a = tree.nodes[(a.parent, None)]
    return share


def _classic(tree: AssociationTree, ledger: UsageLedger) -> dict[Key, float]:
    total = ledger.usage(tree.root.key) or 0.0
    effective: dict[Key, float] = {tree.root.key: 1.0}
    factors: dict[Key, float] = {}

    def walk(parent: Association) -> None:
        all_shares = sum(c.shares for c in parent.children) or 1
        for child in parent.children:
            actual = ledger.usage(child.key) / total if total else 0.0
            effective[child.key] = actual + (effective[parent.key] - actual) * child.shares / all_shares
            if child.user is not None:
                s = _norm_shares(tree, child)
                factors[child.key] = 2 ** (-effective[child.key] / s) if s else 0.0
            walk(child)

    walk(tree.root)
    return factors


def _fair_tree(tree: AssociationTree, ledger: UsageLedger) -> dict[Key, float]:
    ranked: list[list[Key]] = []  # groups of users that tie

    def level_fairshare(children: list[Association]) -> dict[Key, float]:
        shares = sum(c.shares for c in children) or 1
        usage = sum(ledger.usage(c.key) for c in children)
        out = {}
        for c in children:
            u = ledger.usage(c.key) / usage if usage else 0.0
            out[c.key] = math.inf if u == 0 else (c.shares / shares) / u
        return out

    def walk(children: list[Association]) -> None:
        lf = level_fairshare(children)
        by_lf: dict[float, list[Association]] = {}
        for c in children:
            by_lf.setdefault(lf[c.key], []).append(c)
        for value in sorted(by_lf, reverse=True):
            group = by_lf[value]
            users = [c.key for c in group if c.user is not None]
            if users:
                ranked.append(users)
            accounts = [grand for c in group if c.user is None for grand in c.children]
            if accounts:  # tied accounts have their children merged
                walk(accounts)

    walk(tree.root.children)
    count = sum(len(g) for g in ranked)
    factors, rank = {}, count
    for group in ranked:
        for key in group:
            factors[key] = rank / count
        rank -= len(group)
    return factors


def factors(tree: AssociationTree, ledger: UsageLedger, now: float, fair_tree: bool = True) -> dict[Key, float]:
    """The fair-share factor in [0, 1] of every user association."""
    ledger.decay_to(now)
    return _fair_tree(tree, ledger) if fair_tree else _classic(tree, ledger)


def share_rows(tree: AssociationTree, ledger: UsageLedger, now: float, fair_tree: bool = True) -> list[ShareRow]:
    """What ``sshare -a`` shows, in tree order."""
    f = factors(tree, ledger, now, fair_tree)
    total = ledger.usage(tree.root.key)
    rows: list[ShareRow] = []

    def walk(a: Association) -> None:
        for c in a.children:
            use = ledger.usage(c.key)
            rows.append(ShareRow(c.account, c.user, c.shares, _norm_shares(tree, c), use,
                                 use / total if total else 0.0, f.get(c.key, math.nan)))
            walk(c)

    walk(tree.root)
    return rows
