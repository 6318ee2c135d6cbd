"""What a submitit user does, run by the client virtualenv's Python against a live cluster.

    python submitit_session.py SCENARIO FOLDER     (SLURM_CONF and PATH aim at the cluster)

Prints one JSON object: what the user saw.  tests/clients/test_submitit.py asserts on it.
Nothing here imports minislurm: submitit drives the cluster through sbatch, sacct, scancel
and scontrol, as it drives a real one.
"""

import json
import os
import socket
import sys
import time

import submitit


def add(a, b):
    return a + b


def square(x):
    return x * x


def where_am_i():
    env = submitit.JobEnvironment()
    return {"global_rank": env.global_rank, "local_rank": env.local_rank, "num_tasks": env.num_tasks,
            "num_nodes": env.num_nodes, "node": env.node, "hostnames": env.hostnames,
            "hostname": socket.gethostname(), "gpus": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
            "job_id": env.job_id}


def nap(seconds):
    time.sleep(seconds)
    return "woke"


class Counter(submitit.helpers.Checkpointable):
    """Counts to ``total``, a step a second; checkpointed (by submitit) when told its time is up
    or when preempted, and resumed from the count it had."""

    def __init__(self, marks):
        self.count = 0
        self.runs = 0
        self.marks = marks  # a file each run appends to: which count it started at

    def __call__(self, total):
        self.runs += 1
        with open(self.marks, "a") as f:
            f.write(f"{self.count}\n")
        while self.count < total:
            time.sleep(1)
            self.count += 1
        return {"count": self.count, "runs": self.runs}


def final_state(job, within=30):
    """The job's state once sacct says it ended (its results are written before it ends)."""
    deadline = time.time() + within
    while time.time() < deadline and not job.watcher.is_done(job.job_id, mode="force"):
        time.sleep(0.5)
    return job.state


def executor(folder, **params):
    ex = submitit.AutoExecutor(folder=folder, cluster="slurm")
    ex.update_parameters(**{"timeout_min": 10, "slurm_partition": "gpu", **params})
    return ex


def scenario_values(folder):
    ex = executor(folder)
    job = ex.submit(add, 2, 3)
    jobs = ex.map_array(square, range(4))
    many = [ex.submit(add, i, i) for i in range(5)]
    seen = set()
    calls_before = job.watcher.num_calls
    while not all(j.done() for j in many):
        job.watcher.update()  # one sacct for every job not yet finished
        seen |= {j.state for j in many}
        time.sleep(0.5)
    values = {"value": job.result(), "array": [j.result() for j in jobs], "many": [j.result() for j in many]}
    calls = job.watcher.num_calls - calls_before
    return {**values, "states_seen": sorted(seen), "final": sorted({final_state(j) for j in [job, *jobs, *many]}),
            "array_ids": [j.job_id for j in jobs], "sacct_calls": calls}


def scenario_environment(folder):
    ex = executor(folder, nodes=2, tasks_per_node=2, gpus_per_node=2)
    job = ex.submit(where_am_i)
    return {"tasks": job.results(), "state": final_state(job)}


def scenario_cancel(folder):
    ex = executor(folder)
    job = ex.submit(nap, 600)
    deadline = time.time() + 60
    while job.state != "RUNNING" and time.time() < deadline:
        job.watcher.update()
        time.sleep(0.5)
    running = job.state
    job.cancel()
    try:
        job.result()
        outcome = "returned"
    except submitit.core.utils.UncompletedJobError as exc:
        outcome = "UncompletedJobError: " + str(exc).splitlines()[0]
    return {"before": running, "outcome": outcome, "state": final_state(job)}


def scenario_requeue(folder):
    """Preempted by the operator (scontrol requeue, as submitit's own _interrupt does it), then
    out of time: USR2 from --signal before the time limit; each time submitit checkpoints and
    the job runs again, resuming."""
    marks = os.path.join(folder, "marks")
    ex = executor(folder, timeout_min=1, slurm_signal_delay_s=40)
    job = ex.submit(Counter(marks), 30)
    deadline = time.time() + 60
    while not os.path.exists(marks) and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(3)
    job._interrupt()  # preemption: scancel --signal USR2, then submitit's handler requeues
    result = job.result()
    with open(marks) as f:
        starts = [int(line) for line in f]
    return {"result": result, "starts": starts, "state": final_state(job)}


if __name__ == "__main__":
    name, folder = sys.argv[1], sys.argv[2]
    print(json.dumps(globals()["scenario_" + name](folder)))
