"""The controller's fair-share book, with the associations of ``accounts.conf`` beside
slurm.conf when there is one (the book itself is policy: sched/sharebook.py)."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from minislurm.core.accounts import parse_accounts
from minislurm.core.cluster import ClusterConfig
from minislurm.sched.sharebook import FairShareBook

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def load_book(config: ClusterConfig, accounts_file: Path | None) -> FairShareBook:
    """A book of the associations ``accounts_file`` holds, or of root's alone without it."""
    if accounts_file is None or not accounts_file.exists():
        return FairShareBook(config)
    return FairShareBook(config, parse_accounts(accounts_file.read_text(), str(accounts_file), root_user=True))


def sshare(ctl: "Controller") -> dict:
    """What sshare prints (``GET /shares``): a row per association, with the TRES-minutes its
    running jobs still hold; empty without priority/multifactor."""
    book, now = ctl.fairshare, ctl.clock()
    if book is None:
        return {"shares": [], "parents": {}, "tres": [], "fair_tree": True, "root_tres_run_mins": {}}
    rows = [asdict(r) for r in book.rows(now)]
    run = book.run_minutes(ctl.state.running.values(), now)
    for r in rows:  # JSON has no NaN (none) nor infinity (sshare -l prints LevelFS "inf")
        r.update({k: (None if math.isnan(v) else "inf" if math.isinf(v) else v)
                  for k, v in r.items() if isinstance(v, float)})
        r["tres_run_mins"] = run.get((r["account"], r["user"]), {})
    parents = {a.account: a.parent for a in book.tree.nodes.values() if a.user is None}
    return {"shares": rows, "parents": parents, "tres": book.tres_names(), "fair_tree": book.fair_tree,
            "root_tres_run_mins": run.get(("root", None), {})}
