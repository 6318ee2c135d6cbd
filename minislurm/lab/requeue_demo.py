"""A node failure you can watch in seconds: a checkpointing batch job, a crashed node, a requeue.

The job is a few lines of bash, so it needs no GPU and no torch: it counts steps, writes a
checkpoint (the step number, atomically: write, then rename) every ``every`` steps, and on
start resumes after the step in its checkpoint.  :func:`requeue_demo` submits it to a live lab
cluster, kills the node it runs on once it has printed step ``kill_at``, waits until the
controller has requeued it and it has finished elsewhere, and returns what happened: the log
(both attempts, thanks to ``--open-mode=append``), the accounting records ``sacct -D`` shows,
and the restart count.
"""

from __future__ import annotations

from dataclasses import dataclass

SCRIPT = """#!/bin/bash
#SBATCH --job-name=steps
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=%x-%j.out
start=$(cat step.txt 2>/dev/null || echo 0)
echo "restart $SLURM_RESTART_COUNT on $SLURMD_NODENAME: resuming after step $start"
for step in $(seq $((start + 1)) {steps}); do
    sleep {step_time}
    echo "step $step"
    if [ $((step % {every})) -eq 0 ]; then
        echo $step > step.tmp && mv step.tmp step.txt
        echo "step $step: checkpoint written"
    fi
done
echo "done: all {steps} steps"
"""


@dataclass
class RequeueDemo:
    job_id: int
    victim: str  # the node that was killed
    log: str
    records: list[dict[str, str]]  # sacct -D -X: one per run, JobID/State/ExitCode/NodeList
    restart_count: int
    crashed_after: int  # the last step the first attempt printed

    @property
    def states(self) -> list[str]:
        return [r["State"] for r in self.records]

    @property
    def resumed_after(self) -> int:
        """The checkpointed step the second attempt resumed after."""
        for line in self.log.splitlines():
            if line.startswith("restart 1 ") and "resuming after step" in line:
                return int(line.rsplit(" ", 1)[1])
        return -1


def requeue_demo(sh, *, steps: int = 20, every: int = 5, kill_at: int = 7, step_time: float = 0.3,
                 show: bool = True) -> RequeueDemo:
    """Run the demo on the terminal ``sh`` (a :class:`minislurm.lab.terminal.Terminal`).

    The cluster needs a second node for the job to move to; the killed node is started again
    at the end (with ``ReturnToService=1`` it returns to service when its agent registers).
    """
    sh.write("steps.sh", SCRIPT.format(steps=steps, every=every, step_time=step_time), show=show)
    job = sh.submit("sbatch steps.sh", show=show)
    log = f"steps-{job}.out"
    sh.log_has(log, f"step {kill_at}\n", timeout=60)
    victim = sh.job(job)["batch_host"]  # a one-node job: the node its script runs on
    sh.cluster.kill_node(victim)
    # The job may have printed a step or two more between our look at its log and the kill:
    # tell the step it really reached, read after the kill, when nothing writes to the log.
    reached = last_step(sh.read(log))
    if show:
        how = "docker kill: its container" if sh.cluster.kind == "docker" else "its agent"
        print(f"# {victim} crashed after step {reached} ({how} and the job's processes are gone)\n")
    sh.until(lambda: sh.job(job)["restart_count"] >= 1, timeout=60, what="the requeue")
    sh.wait(job, timeout=60)
    if show:
        sh.cat(log)
        sh(f"sacct -D -X -j {job} -o JobID,State,ExitCode,NodeList")
    out = sh(f"sacct -D -X -j {job} -P -o JobID,State,ExitCode,NodeList", show=False)
    header, *lines = [line for line in out.splitlines() if line]
    keys = header.split("|")
    records = [dict(zip(keys, line.split("|"))) for line in lines]
    sh.cluster.start_node(victim)
    sh.until(lambda: sh.node(victim)["state"] == "idle", timeout=30, what=f"{victim} to return")
    demo = RequeueDemo(job, victim, sh.read(log), records, sh.job(job)["restart_count"], reached)
    assert demo.resumed_after == reached - reached % every, "resumed after the last checkpoint before the crash"
    return demo


def last_step(log: str) -> int:
    words = [line.split() for line in log.splitlines() if line.startswith("step ")]
    return max((int(w[1]) for w in words if w[1].isdigit()), default=0)


_CACHE: dict[str, RequeueDemo] = {}


def live_requeue_demo(*, show: bool = False) -> RequeueDemo:
    """The demo on a fresh two-node lab cluster, run once per Python process (a lab's cells and
    its checks share the result); the cluster is stopped before this returns."""
    if "demo" not in _CACHE:
        from minislurm.lab.terminal import lab_cluster

        with lab_cluster(nodes=2, gpus_per_node=1) as sh:
            _CACHE["demo"] = requeue_demo(sh, show=show)
    return _CACHE["demo"]
