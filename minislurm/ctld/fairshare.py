"""The controller's fair-share book, with the associations of ``accounts.conf`` beside
slurm.conf when there is one (the book itself is policy: sched/sharebook.py)."""

from __future__ import annotations

from pathlib import Path

from minislurm.core.accounts import parse_accounts
from minislurm.core.cluster import ClusterConfig
from minislurm.sched.sharebook import FairShareBook


def load_book(config: ClusterConfig, accounts_file: Path | None) -> FairShareBook:
    """A book of the associations ``accounts_file`` holds, or of root's alone without it."""
    if accounts_file is None or not accounts_file.exists():
        return FairShareBook(config)
    return FairShareBook(config, parse_accounts(accounts_file.read_text(), str(accounts_file), root_user=True))
