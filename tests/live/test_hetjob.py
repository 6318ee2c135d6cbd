"""Heterogeneous jobs end to end, beyond what the twin's session ``hetjob`` shows
(tests/live/sessions.py): the leader's script ends every component, with its exit code
(Slurm 22.05 on the twin: ``exit 3`` leaves both components FAILED 3:0); scancel of the leader
stops the steps on every component's nodes; a component is neither cancelled nor requeued
alone."""

from __future__ import annotations

from livekit import until

HET = "#!/bin/bash\n#SBATCH -c 1\n#SBATCH hetjob\n#SBATCH -c 1\n"


def _states(live, job_id: int) -> list[tuple[str, str, str]]:
    out = live.run("sacct", "-j", str(job_id), "-n", "-P", "-o", "JobID,State,ExitCode").stdout
    return [tuple(line.split("|")) for line in out.splitlines()]


def test_the_scripts_exit_ends_every_component(live):
    job = live.sbatch(script=HET + "exit 3\n")
    live.wait(job)
    until(lambda: len(_states(live, job)) == 3, what="both components in sacct")
    assert _states(live, job) == [(f"{job}+0", "FAILED", "3:0"), (f"{job}+0.batch", "FAILED", "3:0"),
                                  (f"{job}+1", "FAILED", "3:0")]


def test_scancel_of_the_leader_stops_every_component(live):
    job = live.sbatch(script=HET + "srun sleep 300 : sleep 300\n")
    def sleeps():  # (every task of the step says SLURM_JOB_ID=<leader>, as on Slurm 22.05)
        return [cmd for _, cmd in live.job_processes(job) if cmd.startswith("sleep 300")]
    until(lambda: len(sleeps()) == 2, what="the step's tasks on both components")
    r = live.run("scontrol", "requeue", str(job + 1))
    assert (r.returncode, r.stderr) == (1, f"Job not heterogeneous job leader for job {job + 1}\n")
    r = live.run("scancel", str(job + 1))
    assert r.returncode == 60 and r.stderr == (f"scancel: error: Kill job error on job id {job + 1}: "
                                               "Operation not permitted on individual component of heterogeneous job\n")
    assert live.run("scancel", str(job)).returncode == 0
    live.wait(job)
    until(lambda: live.job(job + 1)["state"] == "CANCELLED", what="the second component cancelled")
    until(lambda: not live.job_processes(job), what="no task left")
