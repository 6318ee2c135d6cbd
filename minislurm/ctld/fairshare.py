"""The controller's fair-share book: the association tree (from ``accounts.conf`` beside
slurm.conf, if there is one) and the decayed usage every finished job is charged to."""

from __future__ import annotations

from pathlib import Path

from minislurm.core.accounts import AssociationTree, parse_accounts
from minislurm.core.cluster import ClusterConfig
from minislurm.core.job import Job
from minislurm.sched import fairshare


class FairShareBook:
    def __init__(self, config: ClusterConfig, accounts_file: Path | None = None):
        self.config = config
        self.tree = (parse_accounts(accounts_file.read_text(), str(accounts_file))
                     if accounts_file and accounts_file.exists() else AssociationTree())
        self.ledger = fairshare.UsageLedger(self.tree, config.priority.decay_half_life)
        self.fair_tree = "NO_FAIR_TREE" not in config.priority.flags

    def charge(self, job: Job, now: float) -> None:
        """Allocated CPU-seconds, Slurm's default usage measure."""
        self.tree.user(job.user, job.account)
        self.ledger.charge(job.user, job.account, job.alloc.num_cpus * max(0.0, now - job.start_time), now)

    def for_jobs(self, jobs, now: float) -> dict:
        """The factors to give ``jobs`` priorities with.  A job's association exists from its
        submission on (in Slurm it must exist before its user may submit), so a new user's
        first job counts its fair share as the user's later ones do; it used to be created
        only when a first job ended, and a restart forgets it until then."""
        for job in jobs:
            self.tree.user(job.user, job.account)
        return self.factors(now)

    def factors(self, now: float) -> dict:
        return fairshare.factors(self.tree, self.ledger, now, self.fair_tree)

    def rows(self, now: float) -> list:
        return fairshare.share_rows(self.tree, self.ledger, now, self.fair_tree)
