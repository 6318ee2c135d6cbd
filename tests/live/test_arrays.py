"""Arrays act as arrays through the real commands (issue 22, item 3): a bare array id names every
task for scancel and scontrol hold|release|requeue|update, ``A_N`` one task, ``scontrol update
ArrayTaskThrottle`` changes the %N of the array, and every ``sacct -j`` counts."""

from __future__ import annotations

import pytest

from livekit import TERMINAL, until

pytestmark = pytest.mark.live


def _array(live, *argv: str) -> int:
    out = live.run("sbatch", "--parsable", *argv)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split(";")[0])


def test_scancel_of_the_array_id_cancels_running_and_pending_tasks(live):
    live.reset()
    array = _array(live, "--array=1-10", "--exclusive", "--wrap", "sleep 300")
    until(lambda: sum(t["state"] == "RUNNING" for t in live.array_tasks(array)) == 2, 30, "two tasks to run")
    r = live.run("scancel", str(array))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    until(lambda: all(t["state"] in TERMINAL for t in live.array_tasks(array)), 30, "every task to end")
    assert [t["state"] for t in live.array_tasks(array)] == ["CANCELLED"] * 10
    until(lambda: live.run("squeue", "-h", "-j", str(array)).stdout == "", 30, "the array to leave squeue")


def test_scancel_of_one_task_and_of_a_range_leaves_the_others(live):
    """Pending tasks cancelled by themselves leave the array's record without a trace, as on
    22.05 (squeue -r lists A_1 and A_3 only, sacct has no row for the others)."""
    live.reset()
    array = _array(live, "--array=1-5", "--begin=now+1hour", "--wrap", "true")
    assert live.run("scancel", f"{array}_2").returncode == 0
    assert live.run("scancel", f"{array}_[4-5]").returncode == 0
    assert [(t["array_task_id"], t["state"]) for t in live.array_tasks(array)] == [(1, "PENDING"), (3, "PENDING")]
    assert sorted(r["display_id"] for r in live.acct(array)) == [f"{array}_1", f"{array}_3"]
    assert live.run("scancel", str(array)).returncode == 0
    assert {t["state"] for t in live.array_tasks(array)} == {"CANCELLED"}


def test_scontrol_hold_release_and_update_of_the_array_id_change_every_task(live):
    live.reset()
    array = _array(live, "--array=1-4", "--begin=now+1hour", "-t", "10", "--wrap", "true")

    def squeue(*fmt):
        return live.run("squeue", "-h", "-j", str(array), *fmt).stdout

    r = live.run("scontrol", "hold", str(array))
    assert (r.returncode, r.stderr) == (0, "")
    assert squeue("-o", "%i %T %r") == f"{array}_[1-4] PENDING JobHeldAdmin\n"
    assert live.run("scontrol", "release", str(array)).returncode == 0
    assert squeue("-o", "%i %T %r") == f"{array}_[1-4] PENDING BeginTime\n"
    assert live.run("scontrol", "update", f"JobId={array}", "TimeLimit=5").returncode == 0
    assert squeue("-r", "-o", "%i %l") == "".join(f"{array}_{i} 5:00\n" for i in range(1, 5))
    r = live.run("scontrol", "update", f"JobId={array}", "ArrayTaskThrottle=2")
    assert (r.returncode, r.stderr) == (0, "")
    assert squeue("-o", "%i") == f"{array}_[1-4%2]\n"
    assert "ArrayTaskThrottle=2 " in live.run("scontrol", "show", "job", str(array)).stdout
    assert live.run("scontrol", "hold", f"{array}_3").returncode == 0  # one task alone
    assert sorted(squeue("-r", "-o", "%i %r").splitlines()) == [
        f"{array}_1 BeginTime", f"{array}_2 BeginTime", f"{array}_3 JobHeldAdmin", f"{array}_4 BeginTime"]
    assert live.run("scancel", str(array)).returncode == 0


def test_a_raised_array_task_throttle_lets_more_tasks_run(live):
    live.reset()
    array = _array(live, "--array=1-4%1", "--wrap", "sleep 300")
    until(lambda: sum(t["state"] == "RUNNING" for t in live.array_tasks(array)) == 1, 30, "the first task")
    r = live.run("scontrol", "update", f"JobId={array}", "ArrayTaskThrottle=3")
    assert (r.returncode, r.stderr) == (0, "")
    until(lambda: sum(t["state"] == "RUNNING" for t in live.array_tasks(array)) == 3, 30, "three tasks")
    r = live.run("scontrol", "update", f"JobId={array}", "ArrayTaskThrottle=-1")
    assert (r.returncode, r.stderr) == (1, f"Task count specification invalid for job {array}\n")
    assert live.run("scancel", str(array)).returncode == 0


def test_scontrol_requeue_of_the_array_id_requeues_every_running_task(live):
    live.reset()
    array = _array(live, "--array=1-2", "--exclusive", "--wrap", "sleep 300")
    until(lambda: [t["state"] for t in live.array_tasks(array)] == ["RUNNING"] * 2, 30, "both tasks to run")
    r = live.run("scontrol", "requeue", str(array))
    assert (r.returncode, r.stderr) == (0, "")
    until(lambda: [t["restart_count"] for t in live.array_tasks(array)] == [1, 1], 30, "both tasks to be requeued")
    assert live.run("scancel", str(array)).returncode == 0


def test_sacct_takes_every_j_and_comma_lists(live):
    live.reset()
    jobs = [live.sbatch("--wrap", "true") for _ in range(3)]
    for j in jobs:
        live.wait(j)
    until(lambda: all(live.acct(j) and live.acct(j)[0]["end"] for j in jobs), 30, "the records")

    def sacct(*argv):
        r = live.run("sacct", "-X", "-n", "-P", "-o", "JobID,State", *argv)
        assert r.returncode == 0, r.stderr
        return r.stdout

    a, b, c = (str(j) for j in jobs)
    assert sacct("-j", a, "-j", b, "-j", c) == f"{a}|COMPLETED\n{b}|COMPLETED\n{c}|COMPLETED\n"
    assert sacct("-j", f"{a},{b}") == f"{a}|COMPLETED\n{b}|COMPLETED\n"
    assert sacct("--jobs", a, f"--jobs={c}") == f"{a}|COMPLETED\n{c}|COMPLETED\n"


def test_tasks_take_new_ids_as_they_start_and_the_last_keeps_the_array_id(live):
    """Slurm 22.05 numbering: an array takes one id, J; each task split off its record to start
    takes the next free id, and the task left last in the record takes J itself.  The ids show
    in squeue %A, scontrol, sacct's JobIDRaw and the task's SLURM_JOB_ID, survive a controller
    restart, and a started task's own id names it alone (scancel)."""
    live.reset()
    script = 'echo "$SLURM_JOB_ID $SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID"; sleep 300'
    a = _array(live, "--array=0-3%1", "-o", "ids_%a.out", "--wrap", script)

    def running_id(task: int) -> int:
        until(lambda: [t["state"] for t in live.array_tasks(a)][task] == "RUNNING", 30, f"task {task} to run")
        own = live.array_tasks(a)[task]["job_id"]
        until(lambda: (live.work / f"ids_{task}.out").is_file()
              and (live.work / f"ids_{task}.out").read_text().strip(), 30, f"task {task}'s output")
        assert (live.work / f"ids_{task}.out").read_text() == f"{own} {a} {task}\n"
        return own

    assert running_id(0) == a + 1
    show = live.run("scontrol", "show", "job", str(a)).stdout  # the record, and the task split off
    assert [line.split(" JobName")[0] for line in show.splitlines() if line.startswith("JobId=")] == [
        f"JobId={a} ArrayJobId={a} ArrayTaskId=1-3 ArrayTaskThrottle=1", f"JobId={a + 1} ArrayJobId={a} "
        "ArrayTaskId=0 ArrayTaskThrottle=1"]
    squeue = live.run("squeue", "-h", "-r", "-j", str(a), "-o", "%A %i %T").stdout
    assert sorted(squeue.splitlines(), key=lambda line: line.split()[1]) == \
        [f"{a + 1} {a}_0 RUNNING"] + [f"{a} {a}_{i} PENDING" for i in (1, 2, 3)]
    assert live.run("squeue", "-h", "-j", str(a + 1), "-o", "%A %i").stdout == f"{a + 1} {a}_0\n"
    show = live.run("scontrol", "show", "job", str(a + 1)).stdout
    assert f"JobId={a + 1} ArrayJobId={a} ArrayTaskId=0 " in show
    assert live.run("scancel", str(a + 1)).returncode == 0  # a started task's own id: that task alone
    assert running_id(1) == a + 2
    other = live.sbatch("--begin=now+1hour", "--wrap", "true")  # an id taken between two starts
    assert other == a + 3
    assert live.run("scancel", f"{a}_1").returncode == 0
    assert running_id(2) == a + 4
    live.c.restart_controller()  # the ids and the counter were saved
    show = live.run("scontrol", "show", "job", str(a + 2)).stdout
    assert f"JobId={a + 2} ArrayJobId={a} ArrayTaskId=1 " in show
    assert live.run("scancel", str(a + 4)).returncode == 0
    assert running_id(3) == a  # the last task left in the record keeps the array's id
    assert live.run("squeue", "-h", "-j", str(a), "-o", "%A %i").stdout == f"{a} {a}_3\n"
    assert f"JobId={a} ArrayJobId={a} ArrayTaskId=3 " in live.run("scontrol", "show", "job", str(a)).stdout
    assert live.sbatch("--begin=now+1hour", "--wrap", "true") == a + 5
    assert live.run("scancel", str(a)).returncode == 0
    until(lambda: all(t["state"] in TERMINAL for t in live.array_tasks(a)), 30, "every task to end")
    sacct = live.run("sacct", "-X", "-n", "-P", "-j", str(a), "-o", "JobID,JobIDRaw,State").stdout
    assert sacct.splitlines() == [f"{a}_0|{a + 1}|CANCELLED by 0", f"{a}_1|{a + 2}|CANCELLED by 0",
                                  f"{a}_2|{a + 4}|CANCELLED by 0", f"{a}_3|{a}|CANCELLED by 0"]
    one = live.run("sacct", "-X", "-n", "-P", "-j", f"{a}_2", "-o", "JobID,JobIDRaw").stdout
    assert one == f"{a}_2|{a + 4}\n"
    assert live.run("scancel", str(other), str(a + 5)).returncode == 0


def test_sbatch_wait_on_an_array_waits_for_every_task(live):
    """Its tasks change ids as they start; sbatch --wait follows the array and exits with the
    highest exit code of its tasks."""
    live.reset()
    r = live.run("sbatch", "--wait", "--array=0-2%1", "--wrap", "sleep 0.5; exit $SLURM_ARRAY_TASK_ID")
    assert r.returncode == 2, r.stderr
    array = int(r.stdout.split()[-1])
    assert [t["state"] for t in live.array_tasks(array)] == ["COMPLETED", "FAILED", "FAILED"]
