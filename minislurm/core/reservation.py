"""Advance reservations (``scontrol create reservation``): named nodes held for a time window.

Teams use them to hold dedicated capacity for a long training run.  During the window only
jobs that ask for the reservation (``--reservation=NAME``) and whose user or account is
listed may run on its nodes.

Flags modelled: ``MAINT`` (sinfo shows the idle nodes as ``maint``, not ``resv``) and
``IGNORE_JOBS`` (the reservation may start on nodes that jobs still run on); ``SPEC_NODES`` is
shown when the nodes were named; ``REPLACE_DOWN`` is kept and shown, for a reservation by count
only (a reservation by count replaces its lost nodes whether it has the flag or not, as Slurm
22.05 does).  Other Slurm flags are refused at creation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


FLAGS = ("MAINT", "IGNORE_JOBS", "SPEC_NODES", "REPLACE_DOWN")  # those modelled, in the order Slurm lists them


@dataclass
class AdvanceReservation:
    name: str
    nodes: tuple[str, ...]
    start: float
    end: float = math.inf
    users: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    flags: frozenset[str] = field(default_factory=frozenset)
    partition: str | None = None  # set when the nodes were chosen by count (NodeCnt=)

    def overlaps(self, other: "AdvanceReservation") -> bool:
        return bool(set(self.nodes) & set(other.nodes)) and self.start < other.end and other.start < self.end

    def active(self, now: float) -> bool:
        return self.start <= now < self.end

    def admits(self, user: str, account: str) -> bool:
        """May this user/account run jobs in the reservation?"""
        return user in self.users or account in self.accounts
