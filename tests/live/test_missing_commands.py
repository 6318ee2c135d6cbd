"""Issue 22 item 5 end to end on a real local cluster: sinfo -t with a drained node, scontrol
update NodeName=ALL, show step[s], suspend refused, sacct -M with the cluster's own name.
(The expected texts follow Slurm 22.05's source; see the tests/cli modules of each command.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.live


def test_drained_node_in_sinfo_states_and_nodename_all(live):
    live.reset()
    r = live.run("scontrol", "update", "NodeName=ALL", "State=DRAIN", "Reason=fix")
    assert (r.returncode, r.stderr) == (0, "")
    try:
        assert live.run("sinfo", "-h", "-N", "-o", "%N %t", "-t", "idle&drain").stdout == \
            "gpu01 drain\ngpu02 drain\n"
        assert live.run("sinfo", "-h", "-N", "-o", "%N", "-t", "idle").stdout == "gpu01\ngpu02\n"
        r = live.run("sinfo", "-t", "idle+drain")
        assert (r.returncode, r.stdout) == (1, "") and r.stderr.startswith('sinfo: error: Bad state string: "idle+drain"\n')
    finally:
        r = live.run("scontrol", "update", "NodeName=ALL", "State=RESUME")
    assert (r.returncode, r.stderr) == (0, "")
    assert live.run("sinfo", "-h", "-N", "-o", "%N %t").stdout == "gpu01 idle\ngpu02 idle\n"
    assert live.run("sinfo", "-h", "-N", "-o", "%N", "-t", "drain").stdout == ""


def test_show_steps_and_suspend_of_a_running_job(live):
    live.reset()
    job = live.sbatch("--wrap", "srun sleep 30")
    live.wait(job, "RUNNING")
    from livekit import until
    until(lambda: f"StepId={job}.0 " in live.run("scontrol", "show", "steps").stdout, 15, "the srun step")
    out = live.run("scontrol", "show", "step", f"{job}.0").stdout
    assert out.startswith(f"StepId={job}.0 UserId=") and "   State=RUNNING Partition=" in out
    assert live.run("scontrol", "-o", "show", "step", f"{job}.batch").stdout.startswith(f"StepId={job}.batch ")
    r = live.run("scontrol", "show", "step", f"{job}.9")
    assert (r.returncode, r.stdout) == (1, f"Job step {job}.9 not found\n")
    r = live.run("scontrol", "suspend", str(job))
    assert (r.returncode, r.stderr) == (1, f"Requested operation is presently disabled for job {job}\n")
    live.run("scancel", str(job))
    live.wait(job)
    assert live.run("scontrol", "show", "steps").stdout == "No job steps in the system\n"


def test_sacct_clusters(live):
    live.reset()
    job = live.sbatch("--wrap", "true")
    live.wait(job)
    name = live.run("scontrol", "show", "config").stdout.split("ClusterName", 1)[1].split("=", 1)[1].split()[0]
    for clusters in (name, "all", f"nosuch,{name.upper()}"):
        assert live.run("sacct", "-X", "-n", "-P", "-o", "JobID", "-j", str(job), "-M", clusters).stdout == f"{job}\n"
    assert live.run("sacct", "-X", "-n", "-P", "-o", "JobID", "-j", str(job), "-M", "nosuch").stdout == ""
    assert live.run("sacct", "-X", "-n", "-P", "-o", "JobID", "-j", str(job), "-E", "now").stdout == f"{job}\n"
