"""Job and node states, and pending reasons, spelled exactly as Slurm spells them."""

from __future__ import annotations

import enum


class JobState(enum.Enum):
    """Base job states.  ``.code`` is the compact form squeue prints in ``ST``."""

    PENDING = "PD"
    RUNNING = "R"
    SUSPENDED = "S"
    COMPLETING = "CG"
    COMPLETED = "CD"
    CANCELLED = "CA"
    FAILED = "F"
    TIMEOUT = "TO"
    NODE_FAIL = "NF"
    PREEMPTED = "PR"
    BOOT_FAIL = "BF"
    DEADLINE = "DL"
    OUT_OF_MEMORY = "OOM"
    REQUEUED = "RQ"
    REQUEUE_HOLD = "RH"
    SPECIAL_EXIT = "SE"

    @property
    def code(self) -> str:
        return self.value

    @property
    def finished(self) -> bool:
        return self not in _ACTIVE

    @classmethod
    def parse(cls, text: str) -> "JobState":
        """Accept a state name or compact code in any case (``pd``, ``running``)."""
        upper = text.strip().upper()
        for state in cls:
            if upper in (state.name, state.value):
                return state
        raise ValueError(f"Invalid job state specified: {text}")


_ACTIVE = {JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING}


class DependencyOutcome(enum.StrEnum):
    """What a dependency, or one item of it, comes to: met, still waiting, or never to be met
    (:mod:`minislurm.sched.depend` decides; ClusterState records the final ones)."""

    OK = "ok"
    WAIT = "wait"
    NEVER = "never"


class Reason:
    """Pending (and some terminal) reasons, with the strings from Slurm's job_state_reason table."""

    NONE = "None"
    PRIORITY = "Priority"
    RESOURCES = "Resources"
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER = "DependencyNeverSatisfied"
    BEGIN_TIME = "BeginTime"
    HELD_USER = "JobHeldUser"
    HELD_ADMIN = "JobHeldAdmin"
    PARTITION_TIME_LIMIT = "PartitionTimeLimit"
    PARTITION_NODE_LIMIT = "PartitionNodeLimit"
    PARTITION_CONFIG = "PartitionConfig"
    PARTITION_DOWN = "PartitionDown"
    PARTITION_INACTIVE = "PartitionInactive"
    REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"
    RESERVED_FOR_OTHER = "ReqNodeNotAvail, May be reserved for other job"
    RESERVATION = "Reservation"
    NODE_DOWN = "NodeDown"
    BAD_CONSTRAINTS = "BadConstraints"
    ARRAY_TASK_LIMIT = "JobArrayTaskLimit"
    NON_ZERO_EXIT = "NonZeroExitCode"
    TIME_LIMIT = "TimeLimit"
    INACTIVE_LIMIT = "InactiveLimit"
    CLEANING = "Cleaning"
    HOLD_MAX_REQUEUE = "JobHoldMaxRequeue"
    ACCOUNT_NOT_ALLOWED = "AccountNotAllowed"  # WAIT_ACCOUNT: the partition's AllowAccounts

    @staticmethod
    def held(hold: str) -> str:
        """The reason for a job held by ``scontrol hold`` (admin) or ``scontrol uhold``/``-H``."""
        return Reason.HELD_ADMIN if hold == "admin" else Reason.HELD_USER

    @staticmethod
    def unavailable_nodes(hostlist: str) -> str:
        return f"ReqNodeNotAvail, UnavailableNodes:{hostlist}"


class NodeState(enum.Enum):
    """Base node states; ``.compact`` is sinfo's lowercase short form."""

    IDLE = "idle"
    MIXED = "mix"
    ALLOCATED = "alloc"
    COMPLETING = "comp"
    DOWN = "down"
    DRAINED = "drain"
    DRAINING = "drng"
    FAIL = "fail"
    UNKNOWN = "unk"

    @property
    def compact(self) -> str:
        return self.value
