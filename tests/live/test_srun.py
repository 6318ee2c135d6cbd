"""srun against a live cluster: every task's environment, labels, exit codes, waiting for an
allocation, signals, and steps that ask for too much (reference sections 2.1 and 4)."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time

import pytest

from livekit import until

pytestmark = pytest.mark.live

DUMP = 'env -0 > "$OUT/task-$SLURM_STEP_ID-$SLURM_PROCID.env"'


def env_of(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split("\0") if "=" in item)


def check_task_envs(folder, job_id: int, step_id: int, *, gpus: str = "0,1,2,3") -> None:
    """The whole per-task environment of a ``-N2 --ntasks-per-node=4`` step (reference 2.1)."""
    for rank in range(8):
        env = env_of((folder / f"task-{step_id}-{rank}.env").read_text())
        node = rank // 4
        expect = {
            "SLURM_JOB_ID": str(job_id), "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank % 4),
            "SLURM_NODEID": str(node), "SLURMD_NODENAME": f"gpu0{node + 1}",
            "SLURM_STEP_ID": str(step_id), "SLURM_STEPID": str(step_id),
            "SLURM_STEP_NUM_TASKS": "8", "SLURM_NTASKS": "8", "SLURM_STEP_NUM_NODES": "2",
            "SLURM_STEP_TASKS_PER_NODE": "4(x2)", "SLURM_TASKS_PER_NODE": "4(x2)",
            "SLURM_STEP_NODELIST": "gpu[01-02]", "SLURM_JOB_NODELIST": "gpu[01-02]",
            "SLURM_JOB_NUM_NODES": "2", "SLURM_STEP_GPUS": gpus, "CUDA_VISIBLE_DEVICES": gpus,
            "SLURM_GPUS_ON_NODE": str(len(gpus.split(","))),
            "SLURM_GTIDS": "0,1,2,3" if node == 0 else "4,5,6,7",
        }
        assert {k: env.get(k) for k in expect} == expect, rank
        # SLURM_TASK_PID is the task's own pid: the one the task wrote down itself
        pid = (folder / f"pid-{step_id}-{rank}").read_text().strip()
        assert env["SLURM_TASK_PID"] == pid


TASK = DUMP + '; echo $$ > "$OUT/pid-$SLURM_STEP_ID-$SLURM_PROCID"'


def test_srun_inside_sbatch_every_task_env(live, tmp_path):
    script = (f"#!/bin/bash\nexport OUT={tmp_path}\nsrun bash -c '{TASK}'\n"
              f"srun --ntasks-per-node=4 bash -c '{TASK}'\n")
    job_id = live.sbatch("-N2", "--ntasks-per-node=4", "--gres=gpu:4", "-o", "steps-%j.out", script=script)
    job = live.wait(job_id)
    assert job["state"] == "COMPLETED", (live.work / f"steps-{job_id}.out").read_text()
    check_task_envs(tmp_path, job_id, 0)
    check_task_envs(tmp_path, job_id, 1)
    steps = [(r["step"], r["state"], r["nnodes"]) for r in live.acct(job_id)]
    assert steps == [(None, "COMPLETED", 2), ("batch", "COMPLETED", 1), ("0", "COMPLETED", 2),
                     ("1", "COMPLETED", 2)]


def test_srun_outside_allocation_every_task_env(live, tmp_path):
    r = live.run("srun", "-N2", "--ntasks-per-node=4", "--gres=gpu:4", "bash", "-c", TASK,
                 env={"OUT": str(tmp_path)})
    assert (r.returncode, r.stderr) == (0, "")
    job_id = int(env_of((tmp_path / "task-0-0.env").read_text())["SLURM_JOB_ID"])
    check_task_envs(tmp_path, job_id, 0)
    job = live.wait(job_id)
    assert (job["state"], job["exit_code"], job["name"]) == ("COMPLETED", "0:0", "bash")


def test_labels_and_block_layout(live):
    r = live.run("srun", "-N2", "--ntasks-per-node=2", "-l", "bash", "-c",
                 'echo "$SLURMD_NODENAME $SLURM_LOCALID"; echo second')
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert sorted(lines) == sorted([f"{t}: gpu0{t // 2 + 1} {t % 2}" for t in range(4)]
                                   + [f"{t}: second" for t in range(4)])
    for t in range(4):  # each task's lines stay in order
        mine = [line for line in lines if line.startswith(f"{t}: ")]
        assert mine[1] == f"{t}: second"


# Task 0 starts a line and ends it only after task 1 has written a whole line of its own (the
# files are the job's own: each srun here is a job of its own), and half a second later, so that
# task 1's line, relayed by the other node's agent, is surely at srun before task 0 ends.
HALF_LINES = """if [ "$SLURM_PROCID" = 0 ]; then
  printf "a0-"; touch started-$SLURM_JOB_ID
  until [ -e wrote-$SLURM_JOB_ID ]; do sleep 0.05; done; sleep 0.5; echo end; printf tail0
else
  until [ -e started-$SLURM_JOB_ID ]; do sleep 0.05; done; sleep 0.3
  echo "b1 whole"; touch wrote-$SLURM_JOB_ID
fi
"""


def test_task_output_arrives_a_whole_line_at_a_time(live):
    """As Slurm 22.05.8's srun does (checked on docker/slurm): another task's line never lands
    in the middle of one; a last line without a newline is printed as it is (``-l`` ends it)."""
    (live.work / "half-lines.sh").write_text(HALF_LINES)
    r = live.run("srun", "-N2", "-n2", "bash", "half-lines.sh")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split("\n")) == ["a0-end", "b1 whole", "tail0"]
    r = live.run("srun", "-N2", "-n2", "-l", "bash", "half-lines.sh")
    assert sorted(r.stdout.splitlines(keepends=True)) == ["0: a0-end\n", "0: tail0\n", "1: b1 whole\n"]


def test_unbuffered_passes_a_prompt_on_before_its_newline(live):
    """``srun -u``: bytes as they come, so a prompt shows while the task waits for an answer."""
    (live.work / "answered").unlink(missing_ok=True)
    proc = subprocess.Popen([str(live.c.dir / "bin" / "srun"), "-u", "-n1", "bash", "-c",
                             "printf 'name? '; until [ -e answered ]; do sleep 0.05; done; echo ok"],
                            env=live.c.env(), cwd=live.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:  # the prompt comes before the task has written a newline
        assert select.select([proc.stdout], [], [], 20)[0], "no prompt within 20 s"
        assert os.read(proc.stdout.fileno(), 100) == b"name? "
    finally:
        (live.work / "answered").touch()
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (0, b"ok\n"), err


def test_exit_code_is_the_largest_task_exit_code(live):
    r = live.run("srun", "-N2", "--ntasks-per-node=2", "bash", "-c",
                 "exit $(( SLURM_PROCID >= 2 ? 7 : SLURM_PROCID ))")
    assert r.returncode == 7
    assert sorted(r.stderr.splitlines()) == ["srun: error: gpu01: task 1: Exited with exit code 1",  # as they end
                                             "srun: error: gpu02: tasks 2-3: Exited with exit code 7"]
    job_id = max(j["job_id"] for j in live.api.call("GET", "/jobs")["jobs"])
    job = live.wait(job_id)
    assert (job["state"], job["exit_code"]) == ("FAILED", "7:0")


def test_waits_for_resources_and_says_so(live):
    blocker = live.sbatch("-N2", "--gres=gpu:4", "--wrap", "sleep 30")
    live.wait(blocker, "RUNNING")
    proc = subprocess.Popen([str(live.c.dir / "bin" / "srun"), "-N1", "--gres=gpu:4", "echo", "ran"],
                            env=live.c.env(), cwd=live.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first = proc.stderr.readline()
    m = re.fullmatch(r"srun: job (\d+) queued and waiting for resources\n", first)
    assert m, first
    job_id = int(m.group(1))
    assert live.job(job_id)["state"] == "PENDING" and live.job(job_id)["reason"] == "Resources"
    assert live.run("scancel", str(blocker)).returncode == 0
    out, err = proc.communicate(timeout=30)
    assert err == f"srun: job {job_id} has been allocated resources\n"
    assert (proc.returncode, out) == (0, "ran\n")


def test_scancel_of_its_own_job_prints_the_step_line(live):
    """As Slurm 22.05's srun does as a rule (the twin's session step_cancel leaves the line out,
    since a loaded twin once lost it)."""
    proc = subprocess.Popen([str(live.c.dir / "bin" / "srun"), "-J", "own", "bash", "-c", "echo ready; exec sleep 60"],
                            env=live.c.env(), cwd=live.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"  # the task runs (a step only registered may not have begun)
    job_id = live.run("squeue", "-h", "-n", "own", "-o", "%i").stdout.strip()
    assert live.run("scancel", job_id).returncode == 0
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert re.search(rf"^slurmstepd-gpu01: error: \*\*\* STEP {job_id}\.0 ON gpu01 CANCELLED AT \S+ \*\*\*$",
                     err, re.M), err


def _start(live, task: str, *extra: str) -> subprocess.Popen:
    """srun -N2 of a task that says ``ready-<rank>`` once it is set up, then sleeps."""
    proc = subprocess.Popen([str(live.c.dir / "bin" / "srun"), "-N2", *extra, "bash", "-c",
                             task + "; echo ready-$SLURM_PROCID; sleep 1000 & wait"],
                            env=live.c.env(), cwd=live.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert {proc.stdout.readline(), proc.stdout.readline()} == {"ready-0\n", "ready-1\n"}
    return proc


def test_sigterm_is_forwarded_to_every_task(live):
    proc = _start(live, 'trap "echo got-TERM-$SLURM_PROCID; exit 9" TERM')
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert sorted(out.splitlines()) == ["got-TERM-0", "got-TERM-1"]
    assert proc.returncode == 9
    assert sorted(err.splitlines()) == ["srun: error: gpu01: task 0: Exited with exit code 9",
                                        "srun: error: gpu02: task 1: Exited with exit code 9"]


KILLED = ["srun: error: gpu01: task 0: Killed", "srun: error: gpu02: task 1: Killed"]


def forced(err: str) -> list[str]:
    """srun's lines after a forced termination, the exit lines sorted: each node's reaches srun
    when it does (on Slurm too), so under load gpu02's may come first."""
    lines = err.splitlines()
    return lines[:2] + sorted(lines[2:])


def test_ctrl_c_reports_then_a_second_within_a_second_aborts(live):
    """One Ctrl-C reports the tasks' state; a second within a second sends SIGINT to them and
    forces the step's termination.  The tasks ignore SIGINT here, so SIGKILL ends them."""
    proc = _start(live, 'trap "" INT')
    job_id = max(j["job_id"] for j in live.api.call("GET", "/jobs")["jobs"])
    report = ["srun: interrupt (one more within 1 sec to abort)\n", f"srun: StepId={job_id}.0 tasks 0-1: running\n"]
    proc.send_signal(signal.SIGINT)
    assert [proc.stderr.readline(), proc.stderr.readline()] == report
    time.sleep(1.3)  # too late to count as the second one
    proc.send_signal(signal.SIGINT)
    assert [proc.stderr.readline(), proc.stderr.readline()] == report
    assert proc.poll() is None
    for _ in range(5):  # a loaded machine may deliver it more than a second after srun's report
        proc.send_signal(signal.SIGINT)
        first = proc.stderr.readline()
        if first != report[0]:
            break
        assert proc.stderr.readline() == report[1]  # taken as a first Ctrl-C again: once more
    proc.wait(timeout=20)
    out, err = proc.stdout.read(), first + proc.stderr.read()  # (read() keeps what readline buffered)
    assert forced(err) == [f"srun: sending Ctrl-C to StepId={job_id}.0", "srun: forcing job termination",
                           *KILLED]
    assert (proc.returncode, out) == (128 + 9, "")
    until(lambda: not live.job_processes(job_id), 10, "the step's processes to end")


def test_quit_on_interrupt_aborts_on_the_first_ctrl_c(live):
    proc = _start(live, 'trap "" INT', "--quit-on-interrupt")
    job_id = max(j["job_id"] for j in live.api.call("GET", "/jobs")["jobs"])
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert forced(err) == [f"srun: sending Ctrl-C to StepId={job_id}.0", "srun: forcing job termination",
                           *KILLED]
    assert proc.returncode == 137


def test_step_larger_than_the_job_is_refused(live):
    script = "#!/bin/sh\nsrun --gres=gpu:4 true\necho rc=$?\nsrun -N2 true\necho rc=$?\n"
    job_id = live.sbatch("-N1", "--gres=gpu:2", "-o", "big-%j.out", script=script)
    live.wait(job_id)
    assert (live.work / f"big-{job_id}.out").read_text() == (
        "srun: error: Step requested gres_per_node=gpu:4 is more than the job's gres_per_node=gpu:2\n"
        f"srun: error: Unable to create step for job {job_id}: "
        "Invalid generic resource (gres) specification\nrc=1\n"
        "srun: error: Only allocated 1 nodes asked for 2\nrc=1\n")


def test_gpus_per_task_binds_one_gpu_to_each_task(live):
    r = live.run("srun", "-N1", "-n4", "--gpus-per-task=1", "-l", "bash", "-c",
                 'echo "$CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS $SLURM_GPUS_ON_NODE"')
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == [f"{t}: {t} {t} 4" for t in range(4)]  # each task told its own


def test_srun_in_a_job_that_is_not_running(live):
    r = live.run("srun", "--jobid=999999", "true")
    assert r.returncode == 1
    assert r.stderr == ("srun: error: Unable to confirm allocation for job 999999: Invalid job id specified\n"
                        "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 999999\n")
    done = live.sbatch("--wrap", "true")
    live.wait(done)
    r = live.run("srun", f"--jobid={done}", "true")
    assert (r.returncode, r.stderr) == (1, f"srun: error: Slurm job {done} has expired\n"
                                           f"srun: Check SLURM_JOB_ID environment variable. Expired or invalid job {done}\n")
