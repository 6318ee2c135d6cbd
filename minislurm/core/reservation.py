"""Advance reservations (``scontrol create reservation``): named nodes held for a time window.

Teams use them to hold dedicated capacity for a long training run.  During the window only
jobs that ask for the reservation (``--reservation=NAME``) and whose user or account is
listed may run on its nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class AdvanceReservation:
    name: str
    nodes: tuple[str, ...]
    start: float
    end: float = math.inf
    users: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    flags: frozenset[str] = field(default_factory=frozenset)

    def active(self, now: float) -> bool:
        return self.start <= now < self.end

    def admits(self, user: str, account: str) -> bool:
        """May this user/account run jobs in the reservation?"""
        return user in self.users or account in self.accounts
