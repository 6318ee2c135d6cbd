"""The fair-share book the controller and the simulator both keep: the association tree and the
decayed usage every finished job is charged to.  Reading ``accounts.conf`` is the caller's
(ctld/fairshare.py for the controller, sim/replay.py for a replay)."""

from __future__ import annotations

import math
from minislurm.core.accounts import AssociationTree
from minislurm.core.cluster import ClusterConfig
from minislurm.core.job import Job
from minislurm.sched import fairshare


TRES = ["cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages"]


class FairShareBook:
    def __init__(self, config: ClusterConfig, tree: AssociationTree | None = None):
        self.config = config
        self.tree = tree if tree is not None else AssociationTree(root_user=True)  # a cluster's: root's too
        self.ledger = fairshare.UsageLedger(self.tree, config.priority.decay_half_life)
        self.fair_tree = "NO_FAIR_TREE" not in config.priority.flags

    def adopt(self, tree: AssociationTree) -> None:
        """The accounts, users and shares of ``tree`` (sacctmgr's change), kept with their usage;
        an association ``tree`` no longer has stays (jobs charged to it may still end)."""
        for a in tree.nodes.values():  # parents come before their children in a tree's nodes
            mine = self.tree.nodes.get(a.key)
            if mine is None and a.user is None and (a.parent, None) in self.tree.nodes:
                mine = self.tree.add_account(a.account, a.parent, a.shares)
            elif mine is None and a.user is not None:
                mine = self.tree.user(a.user, a.account)
            if mine is not None:
                mine.shares = a.shares

    def charge(self, job: Job, end: float) -> None:
        """Allocated CPU-seconds of the run that ended at ``end``, Slurm's default usage measure."""
        self._charge(job.user, job.account, job.alloc.num_cpus, job.start_time, end)

    def replay(self, records: list[dict]) -> None:
        """Charge again every run the accounting records hold as ended, in the order they ended:
        a restarted controller's usage is then what the old one's was, the decay applied.
        (Each charge matches one record: runs are charged when their record gets its end.)"""
        ended = [r for r in records if r.get("start") is not None and r.get("end") is not None]
        for r in sorted(ended, key=lambda r: (r["end"], r["job_id"], r["restart"])):
            self._charge(r["user"], r["account"], r["alloc_cpus"], r["start"], r["end"])

    def _charge(self, user: str, account: str, cpus: int, start: float, end: float) -> None:
        self.tree.user(user, account)
        self.ledger.charge(user, account, cpus * max(0.0, end - start), end)

    def associate(self, jobs) -> None:
        """A job's association exists from its submission on (in Slurm it must exist before its
        user may submit), so a new user's first job counts its fair share as the user's later
        ones do, also after a restart, before any of their jobs has ended."""
        for job in jobs:
            self.tree.user(job.user, job.account)

    def for_jobs(self, jobs, now: float) -> dict:
        """The factors to give ``jobs`` priorities with (their associations made first)."""
        self.associate(jobs)
        return self.factors(now)

    def factors(self, now: float) -> dict:
        return fairshare.factors(self.tree, self.ledger, now, self.fair_tree)

    def tres_names(self) -> list[str]:
        """Slurm's TRES table in its order: the eight it always has, then the GPUs it accounts."""
        return TRES + (["gres/gpu"] if "gpu" in self.config.gres_types else [])

    def run_minutes(self, running, now: float) -> dict:
        """sshare -l's TRESRunMins: per association (and each account above it, up to root), the
        TRES its running jobs hold times the time they may still run, in whole minutes."""
        secs: dict = {}
        for job in running:
            if job.alloc is None or job.start_time is None or job.time_limit == math.inf:
                continue
            left = max(0.0, job.start_time + job.time_limit - now)
            held = {"cpu": job.alloc.num_cpus, "mem": sum(job.alloc.mem), "node": len(job.alloc.nodes),
                    "billing": job.alloc.num_cpus, "gres/gpu": job.alloc.num_gpus}
            assoc = self.tree.user(job.user, job.account)
            while assoc is not None:
                into = secs.setdefault(assoc.key, {})
                for name, count in held.items():
                    into[name] = into.get(name, 0.0) + count * left
                assoc = self.tree.nodes.get((assoc.parent, None)) if assoc.parent else None
        return {key: {name: int(v // 60) for name, v in tres.items()} for key, tres in secs.items()}

    def rows(self, now: float) -> list:
        return fairshare.share_rows(self.tree, self.ledger, now, self.fair_tree)
