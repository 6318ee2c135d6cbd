"""A queue to read: one running job and five waiting ones, each for a different reason.

Lab 1 runs it on a live cluster and shows what a user sees (``squeue``, ``sinfo``, ``scontrol show
partition``); its exercise asks what each reason means for the job.  The check runs the same
scenario on a fresh cluster and reads the reasons the controller gives, so the answer is
whatever the scheduler really says, not a copy of it.
"""

from __future__ import annotations

# sbatch options of each job, in submission order; {train} becomes train's job id.
JOBS = (
    ("train", "-N2 --gres=gpu:4 --time=30 --wrap 'sleep 600'"),
    ("eval", "--gres=gpu:2 --time=20 --wrap 'sleep 60'"),
    ("big", "-N3 --gres=gpu:1 --time=10 --wrap 'true'"),
    ("report", "--dependency=afterok:{train} --time=5 --wrap 'true'"),
    ("sweep", "--gres=gpu:1 --time=60 --wrap 'sleep 60'"),
)

# What a pending reason means for the job, in the exercise's words.
MEANING = {
    "Resources": "busy",  # first in line; what it needs is in use
    "Priority": "behind",  # another waiting job goes first
    "Dependency": "dependency",  # waits for another job to end
    "PartitionNodeLimit": "never",  # as submitted it can never start here
}


def waiting_scenario(sh) -> dict[str, int]:
    """Submit :data:`JOBS` on the terminal ``sh`` (2 nodes x 4 GPUs, idle); returns name -> job id
    once every waiting job has its reason."""
    ids: dict[str, int] = {}
    for name, opts in JOBS:
        ids[name] = sh.submit(f"sbatch -J {name} {opts.format(**ids)}", show=False)
        if name == "train":
            sh.until(lambda: sh.job(ids["train"])["state"] == "RUNNING", timeout=30, what="train to start")
    waiting = [i for n, i in ids.items() if n != "train"]
    sh.until(lambda: all(sh.job(i)["reason"] in MEANING for i in waiting), timeout=30, what="every reason")
    return ids
