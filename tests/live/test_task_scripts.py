"""srun's ``--task-prolog``/``--task-epilog`` and ``--propagate`` of resource limits (issue 22
item 4), against a live cluster: the prolog runs before each task as the task would and changes
its environment, a failing prolog keeps the task from starting, the epilog runs after each task
(bounded), and the submit host's soft limits reach the tasks and batch scripts."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

pytestmark = [pytest.mark.live, pytest.mark.timeout(90)]

CLUSTER = {"nodes": 2, "gpus_per_node": 4, "cpus_per_node": 4}


def _script(folder, name: str, body: str):
    path = folder / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return path


def _limited(live, limits: str, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """``argv`` (a command of the cluster's) started from a shell whose soft limits are ``limits``."""
    command = " ".join(f"'{a}'" for a in argv)
    return subprocess.run(["bash", "-c", f"{limits}; exec {live.c.dir}/bin/{command}"], text=True,
                          capture_output=True, env=live.c.env(), cwd=str(live.work), timeout=timeout)


def test_task_prolog_sets_the_tasks_environment_and_prints(live):
    _script(live.work, "prolog.sh", 'echo "export GREETING=hi from $SLURM_TASK_PID"\n'
                                    'echo "unset DROPME"\n'
                                    'echo "print   prolog of task $SLURM_PROCID on $SLURMD_NODENAME"\n'
                                    'echo "anything else is ignored"\n')
    r = live.run("srun", "-N2", "-n2", "-l", "--task-prolog=prolog.sh", "bash", "-c",
                 'echo "$GREETING|${DROPME-gone}|$SLURM_SCRIPT_CONTEXT|$$"', env={"DROPME": "here"}, timeout=30)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    lines = r.stdout.splitlines()
    assert sorted(line for line in lines if "prolog of" in line) == ["0: prolog of task 0 on gpu01",
                                                                    "1: prolog of task 1 on gpu02"]
    for task, line in enumerate(sorted(line for line in lines if "prolog of" not in line)):
        m = re.fullmatch(rf"{task}: hi from (\d+)\|gone\|prolog_task\|(\d+)", line)
        assert m and m.group(1) == m.group(2), line  # SLURM_TASK_PID is the task's own pid


def test_a_failing_task_prolog_keeps_the_task_from_starting(live):
    _script(live.work, "refuse.sh", "exit 3\n")
    r = live.run("srun", "-n1", "--task-prolog", "refuse.sh", "touch", "ran.txt", timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (3, "", "srun: error: gpu01: task 0: Exited with exit code 3\n")
    assert not (live.work / "ran.txt").exists()


def test_task_epilog_runs_after_each_task_before_srun_returns(live):
    _script(live.work, "epilog.sh", 'echo "$SLURM_SCRIPT_CONTEXT $SLURMD_NODENAME" > "epi-$SLURM_PROCID.txt"\n'
                                    'echo "not shown"\n')
    r = live.run("srun", "-N2", "-n2", "--task-epilog=epilog.sh", "true", timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert {p.name: p.read_text() for p in live.work.glob("epi-*.txt")} == {
        "epi-0.txt": "epilog_task gpu01\n", "epi-1.txt": "epilog_task gpu02\n"}


def test_a_task_epilog_that_hangs_is_killed(live):
    _script(live.work, "hang.sh", "echo started > hang.txt; sleep 60; echo finished > hang.txt\n")
    began = time.monotonic()
    r = live.run("srun", "-n1", "--task-epilog=hang.sh", "true", timeout=40)
    took = time.monotonic() - began
    assert (r.returncode, r.stderr) == (0, "")
    assert 5 <= took < 30, took
    time.sleep(0.5)
    assert (live.work / "hang.txt").read_text() == "started\n"


def test_resource_limits_reach_the_tasks_as_propagate_says(live):
    show = ["bash", "-c", 'echo "nofile=$(ulimit -S -n) core=$(ulimit -S -c) vars=${!SLURM_RLIMIT_*}"']
    agent_nofile = int(subprocess.run(["bash", "-c", "ulimit -S -n"], capture_output=True, text=True).stdout)
    ours = 333 if agent_nofile != 333 else 334
    limits = f"ulimit -S -n {ours}; ulimit -S -c 0"
    r = _limited(live, limits, "srun", "-n1", *show)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"nofile={ours} core=0 vars=\n", "")
    r = _limited(live, limits, "srun", "-n1", "--propagate=NONE", *show)
    assert r.stdout.startswith(f"nofile={agent_nofile} "), r.stdout
    r = _limited(live, limits, "srun", "-n1", "--propagate=CORE", *show)
    assert r.stdout == f"nofile={agent_nofile} core=0 vars=\n", r.stdout
    r = _limited(live, limits, "srun", "-n1", "--propagate=NOFILE,BOGUS", "true")
    assert (r.returncode, r.stderr) == (1, "srun: error: --propagate=NOFILE,BOGUS is not valid.\n")


def test_a_batch_script_gets_sbatchs_limits(live):
    r = _limited(live, "ulimit -S -n 321", "sbatch", "--parsable", "-o", "limits.out", "--wrap",
                 'echo "nofile=$(ulimit -S -n)"; srun bash -c "ulimit -S -n"')
    assert r.returncode == 0, r.stderr
    job = int(r.stdout)
    assert live.wait(job, timeout=30)["state"] == "COMPLETED"
    assert (live.work / "limits.out").read_text() == "nofile=321\n321\n"
