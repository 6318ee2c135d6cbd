"""Distributed training under minislurm: exact resume after a node failure and before a time
limit, fencing of a stale incarnation, and a crashing rank.

Every run uses ``examples/ddp/train_ddp.py`` with 2 ranks (one per node) so the tests stay
short; the bitwise comparisons are against one uninterrupted reference run of the same size.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from livekit import TERMINAL, read_when, until  # noqa: E402

from minislurm.core.hostlist import expand  # noqa: E402
from minislurm.slurmd import heartbeat  # noqa: E402

pytestmark = pytest.mark.live
# Its own job ids (FirstJobId): DDP's port follows the job id and the demo test trains job 1 on
# this machine at the same time (see test_eight_gpu_node.py).
CLUSTER = {"nodes": 3, "gpus_per_node": 4, "slurmd_timeout": 3, "first_job_id": 3001}
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp"
STEPS, STEP_TIME = 600, "0.02"
SCRIPT = """#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --gres=gpu:1 --requeue --open-mode=append -o %x-%j.out {extra}
echo "=== restart $SLURM_RESTART_COUNT on $SLURM_JOB_NODELIST"
srun python train_ddp.py --steps {steps} --step-time {step_time} --ckpt-every 20 --ckpt-dir ckpt-$SLURM_JOB_ID \\
     --final final-$SLURM_JOB_ID.pt {args}
"""


def submit(live, name: str, extra: str = "", args: str = "", steps: int = STEPS, step_time: str = STEP_TIME) -> int:
    for f in ("train_ddp.py",):
        shutil.copy(EXAMPLE / f, live.work / f)
    script = SCRIPT.format(extra=extra, steps=steps, step_time=step_time, args=args)
    return live.sbatch("-J", name, script=script)


def weights(live, job_id: int) -> dict:
    return torch.load(live.work / f"final-{job_id}.pt", weights_only=True)


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def reference(live):
    """An uninterrupted run: the weights every resumed run must reproduce bit for bit."""
    live.reset()
    job = submit(live, "reference")
    assert live.wait(job, timeout=120)["state"] == "COMPLETED"
    return weights(live, job)


def test_node_failure_requeue_and_exact_resume(live, reference):
    live.reset()
    job = submit(live, "nodefail")
    log = live.work / f"nodefail-{job}.out"
    read_when(log, lambda t: "step 100:" in t, timeout=60)
    victim = expand(live.job(job)["nodes"])[-1]
    live.c.kill_node(victim)
    until(lambda: live.node(victim)["state"].startswith("down"), 15, f"{victim} to go DOWN")
    assert live.node(victim)["reason"] == "Not responding"
    requeued = live.job(job)
    assert requeued["state"] in ("PENDING", "RUNNING") and requeued["restart_count"] == 1
    done = live.wait(job, timeout=120)
    assert done["state"] == "COMPLETED" and victim not in done["nodes"]
    text = log.read_text()
    assert "=== restart 0" in text and "=== restart 1" in text
    resumed_at = int(re.search(r"restart 1: resuming at step (\d+)", text).group(1))
    assert 100 <= resumed_at < STEPS and resumed_at % 20 == 0
    assert same(weights(live, job), reference)
    runs = [(r["step"], r["state"]) for r in live.acct(job, duplicates=True) if r["step"] is None]
    assert runs == [(None, "NODE_FAIL"), (None, "COMPLETED")]
    live.c.start_node(victim)


def test_requeue_itself_before_the_time_limit(live, reference):
    """``--signal=USR1@40`` with a one-minute limit: at 20 s the ranks checkpoint and rank 0 runs
    ``scontrol requeue``; the next incarnation resumes and finishes, bit-identical.  Steps of
    0.05 s (the weights do not depend on it): the 600 steps take 30 s, more than one incarnation
    has, while a slow start on a busy machine (torch's import, the process group) still leaves
    each incarnation time to step on."""
    live.reset()
    job = submit(live, "usr1", extra="-t 1 --signal=USR1@40", step_time="0.05")
    done = live.wait(job, timeout=240)
    text = (live.work / f"usr1-{job}.out").read_text()
    assert done["state"] == "COMPLETED" and done["restart_count"] >= 1, (done["state"], done["restart_count"], done["reason"], done["exit_code"], text[-3000:])
    assert re.search(r"step \d+: time is nearly up, requeueing job %d" % job, text)
    assert "restart 1: resuming at step" in text
    assert same(weights(live, job), reference)
    states = [r["state"] for r in live.acct(job, duplicates=True) if r["step"] is None]
    assert states[0] == "REQUEUED" and states[-1] == "COMPLETED"


def test_a_stale_incarnation_never_writes_again(live):
    """A single-rank job whose node stops answering (agent frozen, job still running) is
    requeued elsewhere; the old run must neither checkpoint nor print again, and is killed
    when its node answers again.  A frozen agent's heartbeat answers ``busy`` for up to
    heartbeat.WEDGED seconds before its nodes fall silent (RELIABILITY.md section 9), so the run
    is made to outlast that."""
    live.reset()
    shutil.copy(EXAMPLE / "train_ddp.py", live.work / "train_ddp.py")
    script = ("#!/bin/bash\n#SBATCH -N1 -n1 --requeue --open-mode=append -o %x-%j.out\n"
              "srun python train_ddp.py --steps 600 --step-time 0.15 --ckpt-every 10 "
              "--ckpt-dir ckpt-$SLURM_JOB_ID --final final-$SLURM_JOB_ID.pt\n")
    job = live.sbatch("-J", "fence", script=script)
    log = live.work / f"fence-{job}.out"
    read_when(log, lambda t: "step 40:" in t, timeout=60)
    node = live.job(job)["nodes"]
    agent = live.c.procs[f"slurmd-{node}"]
    os.kill(agent.pid, signal.SIGSTOP)
    try:
        old = [p for p, _ in live.job_processes(job)]  # the batch script, srun and the rank
        assert old and all(_restart(p) == 0 for p in old)
        until(lambda: live.job(job)["restart_count"] == 1, heartbeat.WEDGED + 30, "the job to be requeued")
        read_when(log, lambda t: "restart 1: resuming at step" in t, timeout=60)
        until(lambda: "restart 1 | step" in log.read_text(), 60, "the new run to checkpoint")
    finally:
        os.kill(agent.pid, signal.SIGCONT)
    done = live.wait(job, timeout=180)
    assert done["state"] == "COMPLETED" and done["restart_count"] == 1
    text = log.read_text()
    resumed_at = int(re.search(r"restart 1: resuming at step (\d+)", text).group(1))
    stale_steps = [int(k) for k in re.findall(r"restart 0 \| step (\d+):", text)]
    # Lines the stale run printed before the new run claimed the folder may reach the log late
    # (they waited in the frozen agent), but it never got past the checkpoint the new run took.
    assert stale_steps and max(stale_steps) <= resumed_at
    assert "Exited with exit code" not in text  # it did not even die noisily: it waited to be killed
    assert torch.load(live.work / f"ckpt-{job}" / "checkpoint.pt", weights_only=True)["meta"]["restart_count"] == 1
    until(lambda: not any(_alive(p) for p in old), 15, "the stale run to be gone")


def test_a_crashing_rank_fails_the_step_and_the_job(live):
    live.reset()
    job = submit(live, "crash", args="--crash-rank 1 --crash-step 5", steps=50)
    done = live.wait(job, timeout=90)
    assert done["state"] == "FAILED" and done["exit_code"] == "1:0"
    text = (live.work / f"crash-{job}.out").read_text()
    assert "rank 1: simulated crash at step 5" in text
    assert re.search(r"srun: error: gpu\d+: task 1: Exited with exit code 1", text)


def test_more_gpus_than_a_node_has_is_refused(live):
    r = live.run("sbatch", "-N2", "--gres=gpu:8", "--wrap", "true")
    assert r.returncode == 1
    assert r.stderr == "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"


def _restart(pid: int) -> int | None:
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"SLURM_RESTART_COUNT="):
            return int(item.split(b"=", 1)[1])
    return None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


CHAIN = """#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --gres=gpu:1 -t 1 --signal=USR1@40 --requeue --open-mode=append -o %x-%A_%a.out
echo "=== link $SLURM_ARRAY_TASK_ID, job $SLURM_JOB_ID, restart $SLURM_RESTART_COUNT"
srun python train_ddp.py --steps {steps} --step-time 0.05 --ckpt-every 20 --when-warned stop \\
     --final final-$SLURM_ARRAY_JOB_ID.pt
"""
LINKS = 6


def test_a_chain_of_links_resumes_through_a_node_failure_and_ends_as_one_run(live, reference):
    """``--array=1-6%1`` of one-minute links (issue 25, item 1): each link trains until its
    warning 20 s in, checkpoints and ends; the next link (a new job id) goes on from the run's
    folder, ``ckpt/<array id>``; a node lost in the middle of link 2 requeues that link, which
    later resumes from the run's latest checkpoint (meanwhile minislurm's ``%1`` lets link 3
    run: its throttle counts running tasks); the links after the end find the run finished and exit 0.
    The run ends bit-identical to the uninterrupted reference.  Steps of 0.05 s: the 600 steps
    sleep 30 s, more than a link's 20 s, however fast the machine."""
    live.reset()
    shutil.copy(EXAMPLE / "train_ddp.py", live.work / "train_ddp.py")
    out = live.run("sbatch", "--parsable", f"--array=1-{LINKS}%1", "-J", "chain", input=CHAIN.format(steps=STEPS))
    assert out.returncode == 0, out.stderr
    array = int(out.stdout.split(";")[0])

    def log(task: int) -> str:
        path = live.work / f"chain-{array}_{task}.out"
        return path.read_text() if path.exists() else ""

    read_when(live.work / f"chain-{array}_2.out",
              lambda t: "resuming at step" in t and "| step" in t.split("resuming at step", 1)[1], timeout=240)
    second = live.array_tasks(array)[1]
    victim = expand(second["nodes"])[-1]
    live.c.kill_node(victim)
    until(lambda: live.job(second["job_id"])["restart_count"] == 1, 30, "link 2 to be requeued")
    live.c.start_node(victim)
    until(lambda: len(live.array_tasks(array)) == LINKS and all(t["state"] in TERMINAL for t in live.array_tasks(array)), 480, "every link to end")
    logs = {t["job_id"]: log(t["array_task_id"]) for t in live.array_tasks(array)}
    assert [t["state"] for t in live.array_tasks(array)] == ["COMPLETED"] * LINKS, [text[-1500:] for text in logs.values()]
    first = live.array_tasks(array)[0]["job_id"]
    assert "starting at step 0 on 2 ranks (run %d)" % array in logs[first]
    assert "link %d stops; the next link goes on" % first in logs[first]
    assert [job for job, text in logs.items() if "starting at step 0" in text] == [first]  # one run, one start
    assert re.search(r"job %d restart 0: resuming at step \d+ \(checkpoint of job %d restart 0\)"
                     % (second["job_id"], first), logs[second["job_id"]])
    assert re.search(r"job %d restart 1: resuming at step \d+ \(checkpoint of " % second["job_id"],
                     logs[second["job_id"]])
    assert "run %d finished at step %d (of %d); nothing to do" % (array, STEPS, STEPS) in log(LINKS)
    assert same(torch.load(live.work / f"final-{array}.pt", weights_only=True), reference)
