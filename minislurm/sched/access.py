"""Who may ask for what: the rules Slurm keeps for privileged users and for associations, in
one place that submission (:func:`minislurm.sched.submit.build_jobs`: sbatch, srun, salloc) and
``scontrol update`` (:func:`minislurm.ctld.actions.update_job`) both call, so the two paths
cannot disagree (a queue jump refused by one and taken by the other).

Slurm 22.05's rules, each checked on its source and the twin:

* a negative ``--nice`` is an operator's (root, SlurmUser, AdminLevel Operator or
  Administrator): submission says ``Invalid --nice value``, an update ``Access/permission
  denied``; ``--priority`` from anyone else is ignored, as slurmctld drops it;
* ``--uid``/``--gid`` (submitting for someone else) are root's and SlurmUser's: ``Invalid user
  id`` / ``Invalid group id`` to anyone else;
* only an operator lengthens a time limit (``Access/permission denied``);
* a partition's ``AllowGroups`` admits its groups' members, root and SlurmUser (``User's group
  not permitted to use this partition``); its ``AllowAccounts`` is checked as the job is
  scheduled (pending ``AccountNotAllowed``), or at submission under EnforcePartLimits;
* with ``AccountingStorageEnforce=associations`` a job is charged to the account it names only
  if its user is associated with it, to the user's default account if it names none; any other
  (someone else's, an unknown one) is ``Invalid account or account/partition combination
  specified``.  Without enforcement the account is a label, ``default`` when none is given;
* a reservation admits the users and accounts it names (``Access denied to requested
  reservation``), its account checked after the association, so ``-A`` of another's account
  opens no reservation.

Pure: the controller looks the user up (operator, groups, associations) and hands in a
:class:`Requester`.
"""

from __future__ import annotations

from dataclasses import dataclass

from minislurm.core import errors
from minislurm.core.cluster import ClusterConfig, PartitionConfig
from minislurm.core.errors import SlurmError
from minislurm.core.reservation import AdvanceReservation

INVALID_NICE = "Invalid --nice value"  # ESLURM_INVALID_NICE, submission's word for it
GROUP_NOT_PERMITTED = "User's group not permitted to use this partition"
INVALID_GROUP = "Invalid group id"
DEFAULT_ACCOUNT = "default"  # a job's account when no association is enforced and none is named


@dataclass(frozen=True)
class Requester:
    """Who asks, as the controller knows them.  The defaults trust the asker (the lab models
    and the simulator build jobs without a user database)."""

    user: str
    operator: bool = True  # root, SlurmUser or AdminLevel=Operator/Administrator
    super_user: bool = True  # root or SlurmUser (AllowGroups, --uid/--gid)
    groups: frozenset[str] = frozenset()  # Unix groups, for AllowGroups
    accounts: tuple[str, ...] = ()  # associations, the default account first


def check_nice(nice: int | None, who: Requester, *, update: bool = False) -> None:
    if nice is not None and nice < 0 and not who.operator:
        raise SlurmError(errors.ACCESS_DENIED if update else INVALID_NICE)


def given_priority(value: str | None, who: Requester) -> int | None:
    """``--priority``: an operator's fixes the job's priority; anyone else's is dropped, as
    slurmctld does (``TOP`` is not modelled: dropped too)."""
    if value is None or not who.operator or not value.strip().isdigit():
        return None
    return int(value)


def check_identity(uid: str | None, gid: str | None, who: Requester) -> None:
    """A job submitted for another user or group (``--uid``, ``--gid``)."""
    if uid is not None and not who.super_user:
        raise SlurmError(errors.USER_ID_MISSING)
    if gid is not None and not who.super_user:
        raise SlurmError(INVALID_GROUP)


def check_time_limit(new: float, old: float, who: Requester) -> None:
    if new > old and not who.operator:
        raise SlurmError(errors.ACCESS_DENIED)


def check_partition(part: PartitionConfig, who: Requester) -> None:
    """AllowGroups: checked wherever a job enters a partition (submission, update)."""
    if part.allow_groups is not None and not who.super_user and not who.groups & set(part.allow_groups):
        raise SlurmError(GROUP_NOT_PERMITTED)


def account_allowed(part: PartitionConfig, account: str) -> bool:
    """AllowAccounts: whether the partition takes jobs of ``account``."""
    return part.allow_accounts is None or account in part.allow_accounts


def job_account(requested: str | None, who: Requester, config: ClusterConfig) -> str:
    """The account a job is charged to, or Slurm's refusal when associations are enforced."""
    if "associations" not in config.accounting_enforce:
        return requested or DEFAULT_ACCOUNT
    if not who.accounts or (requested is not None and requested not in who.accounts):
        raise SlurmError(errors.INVALID_ACCOUNT)
    return requested or who.accounts[0]


def check_reservation(resv: AdvanceReservation, user: str, account: str) -> None:
    if not resv.admits(user, account):
        raise SlurmError(RESERVATION_ACCESS)


RESERVATION_ACCESS = "Access denied to requested reservation"
