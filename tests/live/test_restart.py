"""Restarting the controller alone, with jobs pending and running (reference 5.5: job state,
ids and running jobs survive a slurmctld restart)."""

from __future__ import annotations

import pytest

from livekit import read_when, until

pytestmark = pytest.mark.live


def test_restart_keeps_ids_pending_running_and_finished_jobs(live):
    # It ends only when the test says so (a file appears), so it is still running after the
    # restart however slow the machine is (a fixed sleep 8 ended first on a loaded one).
    go = live.work / "go-on"
    running = live.sbatch("--gres=gpu:4", "-o", "run-%j.out", "--wrap",
                          f"echo start; until [ -e {go} ]; do sleep 0.1; done; echo end")
    ends_while_down = live.sbatch("--gres=gpu:2", "-o", "short-%j.out", "--wrap", "sleep 1; exit 3")
    live.wait(running, "RUNNING")
    live.wait(ends_while_down, "RUNNING")
    pending = live.sbatch("-N2", "--gres=gpu:4", "--wrap", "echo later")
    held = live.sbatch("--hold", "--wrap", "true")
    read_when(live.work / f"run-{running}.out", lambda t: "start" in t)
    until(lambda: live.job(pending)["reason"] == "Resources", 5, "the pass to block the pending job")

    live.c.restart_controller(pause=2.0)  # the short job ends while no controller is there

    jobs = {j["job_id"]: j for j in live.api.call("GET", "/jobs")["jobs"]}
    assert jobs[running]["state"] == "RUNNING"
    assert jobs[pending]["state"] == "PENDING"
    assert (jobs[held]["state"], jobs[held]["reason"]) == ("PENDING", "JobHeldUser")
    assert live.sbatch("--wrap", "true") == held + 1  # ids continue

    # the job that ended meanwhile is reported by its agent once the controller is back
    job = live.wait(ends_while_down, timeout=15)
    assert (job["state"], job["exit_code"]) == ("FAILED", "3:0")
    go.touch()
    job = live.wait(running, timeout=15)
    assert (job["state"], job["exit_code"]) == ("COMPLETED", "0:0")
    assert (live.work / f"run-{running}.out").read_text() == "start\nend\n"
    assert live.wait(pending, timeout=15)["state"] == "COMPLETED"
    r = live.run("sacct", "-X", "-j", f"{running},{ends_while_down},{pending}", "-o", "JobID,State,ExitCode",
                 "--parsable2", "-n")
    assert r.stdout == (f"{running}|COMPLETED|0:0\n{ends_while_down}|FAILED|3:0\n{pending}|COMPLETED|0:0\n")
    assert live.job(held)["state"] == "PENDING"
    assert live.run("scancel", str(held)).returncode == 0


def test_steps_and_nodes_after_a_restart(live):
    live.reset()
    r = live.run("scontrol", "update", "NodeName=gpu02", "State=DRAIN", "Reason=kept")
    assert r.returncode == 0
    live.c.restart_controller()
    node = live.node("gpu02")  # saved state at once, not responding until its first ping
    assert (node["state"], node["reason"]) == ("drain", "kept")
    until(lambda: all("NOT_RESPONDING" not in live.node(n)["flags"] for n in ("gpu01", "gpu02")), 5,
          "the first ping")
    assert live.node("gpu02")["state"] == "drain"
    assert live.run("scontrol", "update", "NodeName=gpu02", "State=RESUME").returncode == 0
    r = live.run("srun", "-N2", "-l", "bash", "-c", "echo $SLURM_STEP_ID")
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, ["0: 0", "1: 0"])


def test_fair_share_usage_survives_a_kill_9_of_the_controller(live):
    """sshare's RawUsage is state: after kill -9 the new controller charges every user what the
    old one did (rebuilt from the accounting records, decayed to now: PriorityDecayHalfLife is
    a day here, so a few seconds change it by far less than a unit)."""
    job = live.sbatch("-n", "2", "--wrap", "sleep 2")
    live.wait(job, timeout=30)

    def raw_usage() -> dict[str, int]:
        out = live.run("sshare", "-a", "-P").stdout.splitlines()  # Account|User|RawShares|NormShares|RawUsage|...
        at = out[0].split("|").index("RawUsage")
        return {f"{f[0].strip()}/{f[1]}": int(f[at]) for f in (line.split("|") for line in out[1:] if line)}

    user = live.job(job)["user"]
    before = until(lambda: raw_usage() if raw_usage().get(f"default/{user}") else None, 15,
                   "the finished job's usage in sshare")
    live.c.restart_controller(crash=True)
    after = raw_usage()
    assert after.keys() == before.keys()
    assert all(abs(after[k] - before[k]) <= 1 for k in before), (before, after)
