"""Slurm's error strings (``slurm_strerror``) as one exception type.

Every rejected request in minislurm raises :class:`SlurmError` carrying Slurm's exact text,
so commands can print ``sbatch: error: Batch job submission failed: <text>``.
"""

from __future__ import annotations


class SlurmError(Exception):
    """An error Slurm would report with one of its fixed messages."""

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message if detail is None else f"{message}: {detail}")
        self.message = message
        self.detail = detail


NODE_CONFIG_UNAVAILABLE = "Requested node configuration is not available"
PART_CONFIG_UNAVAILABLE = "Requested partition configuration not available now"
INVALID_NODE_COUNT = "Node count specification invalid"
TOO_MANY_CPUS = "More processors requested than permitted"
INVALID_GRES = "Invalid generic resource (gres) specification"
INSUFFICIENT_GRES = "Insufficient GRES available in allocation"
NODES_BUSY = "Requested nodes are busy"
INVALID_TRES = "Invalid Trackable RESource (TRES) specification"
INVALID_TIME_LIMIT = "Requested time limit is invalid (missing or exceeds some limit)"
INVALID_PARTITION = "Invalid partition name specified"
DEPENDENCY = "Job dependency problem"
DISABLED = "Requested operation is presently disabled"
INVALID_JOB_ID = "Invalid job id specified"
ACCESS_DENIED = "Access/permission denied"
INVALID_NODE_NAME = "Invalid node name specified"
INVALID_ACCOUNT = "Invalid account or account/partition combination specified"
INVALID_RESERVATION = "Requested reservation is invalid"
JOB_PENDING = "Job is pending execution"
BATCH_ONLY = "Only batch jobs are accepted or processed"
ALREADY_DONE = "Job/step already completing or completed"
STATE_SAVE_FAILED = "Slurm controller cannot save its state, request refused"  # minislurm's own text
INVALID_TIME_VALUE = "Invalid time specified"
BAD_TASK_COUNT = "Task count specification invalid"
USER_ID_MISSING = "Invalid user id"
PATHNAME_TOO_LONG = "Pathname of a file, directory or other parameter too long"
HETJOB_UNSUPPORTED = "Heterogeneous jobs are not supported by minislurm"  # minislurm's own text
NOT_WHOLE_HET_JOB = "Operation not permitted on individual component of heterogeneous job"
HET_GROUP_BEYOND = "Requested het-group offset exceeds highest hetjob index"  # srun's words, no step prefix
HET_GROUP_ABOVE = "Attempt to run a job step with het group value of"  # srun's, when it names several
NOT_WHOLE_HET_JOB_ERRNO = 2108  # ESLURM_NOT_WHOLE_HET_JOB: scancel exits with its low byte (60)
NOT_HET_JOB_LEADER = "Job not heterogeneous job leader"
