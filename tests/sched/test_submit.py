"""Submission: what ``build_jobs`` refuses (with Slurm's exact message) and what it accepts.

Requests are parsed by the real option parser.  The cluster is 4 nodes x 32 CPUs x 256000 MB
x 8 GPUs in one partition "gpu", with EnforcePartLimits=NO (the default): a job that breaks a
partition limit is queued and pends; one no node could ever hold is refused.
"""

from __future__ import annotations

import pytest

from minislurm.core import errors
from minislurm.core.cluster import ClusterConfig, NodeConfig, PartitionConfig, simple_cluster
from minislurm.core.directives import build_spec
from minislurm.core.errors import SlurmError
from minislurm.core.options import parse_options
from minislurm.core.reservation import AdvanceReservation
from minislurm.core.state import ClusterState
from minislurm.sched import priority
from minislurm.sched.apply import apply
from minislurm.sched.schedule import schedule
from minislurm.sched.submit import NeverRuns, build_jobs

NOW = 1000.0
NODE_CONFIG = "Requested node configuration is not available"


def cluster(**kw) -> ClusterState:
    return ClusterState(simple_cluster(4, cpus=32, mem=256_000, gpus=8, **kw))


def spec(*words):
    parsed, rest = parse_options([*words, "job.sh"], now=NOW)
    assert rest == ["job.sh"]
    return parsed


def build(state, *words, user="alice"):
    """build_jobs, and the ids it used recorded, as the controller does."""
    try:
        jobs = build_jobs(spec(*words), state, first_id=state.next_job_id, user=user, now=NOW)
    except NeverRuns as err:
        state.used_job_ids(err.job.job_id)
        raise
    state.used_job_ids(jobs[-1].job_id)
    return jobs


def refused(state, *words, user="alice") -> str:
    """The message of the refusal; also checks that no job was queued, and that only a request
    no node could ever hold used up a job id (as in slurmctld, which records it FAILED)."""
    jobs, next_id = dict(state.jobs), state.next_job_id
    with pytest.raises(SlurmError) as err:
        build(state, *words, user=user)
    assert state.jobs == jobs
    if isinstance(err.value, NeverRuns):
        assert (err.value.job.job_id, state.next_job_id) == (next_id, next_id + 1)
        assert err.value.message == NODE_CONFIG
    else:
        assert state.next_job_id == next_id
    return err.value.message


def queue(state, jobs, now=NOW) -> dict[int, str]:
    """Queue accepted jobs as the controller does, run one pass, return its reasons."""
    for job in jobs:
        job.priority = priority.initial(job, state, now)
        state.add(job)
    result = schedule(state, now, every_reason=True)
    apply(state, result)
    return {j.job_id: result.reasons[j.job_id] for j in jobs if j.pending}


# -- refused ------------------------------------------------------------------------------

@pytest.mark.parametrize("words, message", [
    (("--gres=gpu:16",), NODE_CONFIG),
    (("-n", "64", "-N", "1"), NODE_CONFIG),
    (("--gpus-per-node=9",), NODE_CONFIG),
    (("--gres=gpu:a100:1",), NODE_CONFIG),  # no node has typed GPUs
    (("-c", "33"), NODE_CONFIG),
    (("--mem=300G",), NODE_CONFIG),
    (("-N", "2", "--mem-per-cpu=10000", "-c", "32"), NODE_CONFIG),
    (("-x", "node[01-04]"), NODE_CONFIG),
    (("-N", "2", "-x", "node[01-03]"), NODE_CONFIG),
    (("--gres=foo:1",), "Invalid generic resource (gres) specification"),
    (("-p", "nope"), "Invalid partition name specified"),
    (("-w", "node09"), "Invalid node name specified"),
    (("-x", "node09"), "Invalid node name specified"),
    (("-w", "node01", "-x", "node[01-02]"), "Invalid node name specified"),  # lists overlap
    # _job_create raises min_nodes to the -w count; above max_nodes it is ESLURM_INVALID_NODE_COUNT.
    (("-N", "1", "-w", "node[01-02]"), "Node count specification invalid"),
    (("--reservation=nope",), "Requested reservation is invalid"),
])
def test_refused_with_slurms_message(words, message):
    assert refused(cluster(), *words) == message


def test_gpu_request_without_gpu_gres_type_is_invalid_gres():
    state = ClusterState(simple_cluster(2, cpus=32, mem=64_000, gpus=0))
    assert state.config.gres_types == set()
    for words in (("--gpus=1",), ("--gres=gpu:1",), ("--gpus-per-task=1", "-n", "1")):
        assert refused(state, *words) == errors.INVALID_GRES


def test_first_fault_in_slurmctld_order_is_reported():
    # _job_create checks partition, GRES and dependencies; the "can it ever run" test
    # (select_nodes) comes after the job record exists.
    state = cluster()
    assert refused(state, "-p", "nope", "--gres=foo:1") == errors.INVALID_PARTITION
    assert refused(state, "--gres=foo:1", "-d", "afterok:999") == errors.INVALID_GRES
    assert refused(state, "--gres=gpu:16", "--reservation=nope") == errors.INVALID_RESERVATION


def test_reservation_access():
    state = cluster()
    state.add_reservation(AdvanceReservation("team", ("node01",), start=0.0, users=frozenset({"bob"}),
                                             accounts=frozenset({"ml"})))
    assert refused(state, "--reservation=team", user="alice") == "Access denied to requested reservation"
    assert build(state, "--reservation=team", user="bob")[0].reservation == "team"
    assert build(state, "--reservation=team", "-A", "ml", user="alice")[0].account == "ml"


@pytest.mark.parametrize("part_state", ["DRAIN", "INACTIVE"])
def test_closed_partition_refuses_new_jobs(part_state):
    state = cluster()
    state.partitions["gpu"].state = part_state
    assert refused(state, "-N", "1") == "Required partition not available (inactive or drain)"


def test_down_partition_queues_the_job():
    state = cluster()
    state.partitions["gpu"].state = "DOWN"
    jobs = build(state)
    assert queue(state, jobs) == {jobs[0].job_id: "PartitionDown"}


def test_required_node_outside_the_partition_is_refused():
    # Seen in cdt-data-science/cluster-scripts#14: -w with a node of another partition gives
    # "Requested node configuration is not available" under the default EnforcePartLimits=NO.
    nodes = [NodeConfig(f"node0{i}", cpus=32, real_memory=64_000, gpus=8, state="IDLE") for i in (1, 2)]
    state = ClusterState(ClusterConfig(nodes=nodes, gres_types={"gpu"}, partitions=[
        PartitionConfig("a", nodes=["node01"], default=True), PartitionConfig("b", nodes=["node02"])]))
    assert refused(state, "-w", "node02") == NODE_CONFIG
    assert build(state, "-p", "b", "-w", "node02")[0].partition == "b"


def test_refusals_leave_the_job_table_alone_and_only_never_runnable_ones_use_an_id():
    state = cluster()
    ok = build(state, "-N", "1")
    queue(state, ok)
    for words in (("--gres=gpu:16",), ("--gres=foo:1",), ("-p", "nope"), ("-a", "0-9", "--gres=gpu:9")):
        refused(state, *words)
    # the two GPU requests no node could hold used up ids 2 and 3 (an array job takes one)
    assert list(state.jobs) == [ok[0].job_id] and state.next_job_id == ok[0].job_id + 3


# -- accepted, then pending ------------------------------------------------------------------

def test_time_over_max_time_is_accepted_and_pends():
    state = cluster()
    state.partitions["gpu"].max_time = 3600.0
    jobs = build(state, "-t", "61")
    assert jobs[0].time_limit == 3660.0
    assert queue(state, jobs) == {jobs[0].job_id: "PartitionTimeLimit"}


def test_no_time_limit_is_over_any_max_time():
    state = cluster()
    state.partitions["gpu"].max_time = 3600.0
    jobs = build(state, "-t", "0")
    assert jobs[0].time_limit == float("inf")
    assert queue(state, jobs) == {jobs[0].job_id: "PartitionTimeLimit"}


def test_more_nodes_than_the_partition_has_is_accepted_and_pends():
    state = cluster()
    jobs = build(state, "-N", "8")
    assert jobs[0].num_nodes == 8
    assert queue(state, jobs) == {jobs[0].job_id: "PartitionNodeLimit"}


def test_more_nodes_than_max_nodes_is_accepted_and_pends():
    state = cluster()
    state.partitions["gpu"].max_nodes = 2
    jobs = build(state, "-N", "3")
    assert queue(state, jobs) == {jobs[0].job_id: "PartitionNodeLimit"}


def test_begin_time_is_carried():
    state = cluster()
    jobs = build(state, "--begin=now+60")
    assert jobs[0].begin_time == NOW + 60
    assert queue(state, jobs) == {jobs[0].job_id: "BeginTime"}


# -- what an accepted job carries ---------------------------------------------------------------

def test_hold_is_a_user_hold_with_priority_zero():
    state = cluster()
    jobs = build(state, "--hold")
    assert jobs[0].hold == "user"
    assert queue(state, jobs) == {jobs[0].job_id: "JobHeldUser"}
    assert jobs[0].priority == 0


@pytest.mark.parametrize("job_requeue, words, expected", [
    (True, (), True), (False, (), False), (False, ("--requeue",), True), (True, ("--no-requeue",), False),
])
def test_requeue_defaults_to_job_requeue(job_requeue, words, expected):
    state = cluster()
    state.config.job_requeue = job_requeue
    assert build(state, *words)[0].requeue is expected


def test_identity_fields():
    state = cluster()
    first = build(state, "-J", "train", "-A", "ml", "--nice=5")[0]
    assert (first.user, first.account, first.name, first.nice, first.partition, first.submit_time) == \
        ("alice", "ml", "train", 5, "gpu", NOW)
    plain = build_jobs(spec(), state, first_id=9, user="bob", now=NOW)[0]
    assert (plain.account, plain.name, plain.hold, plain.reservation) == ("default", "sbatch", None, None)


def test_dependency_on_an_existing_job_or_array_is_accepted():
    state = cluster()
    array = build(state, "-a", "0-2")
    queue(state, array)
    job = build(state, "-d", f"afterok:{array[0].job_id}?afterany:{array[2].job_id}")[0]
    assert str(job.dependency) == f"afterok:{array[0].job_id}?afterany:{array[2].job_id}"
    assert job.dependency.any_of is True


def test_script_directives_with_command_line_override():
    script = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gres=gpu:4\n#SBATCH -t 10\nsrun python train.py\n"
    parsed, rest = build_spec(script, {}, ["-N", "1", "run.sh"], now=NOW, path="run.sh")
    assert rest == ["run.sh"]
    job = build_jobs(parsed, cluster(), first_id=1, user="alice", now=NOW)[0]
    assert (job.name, job.num_nodes, job.shape.gpus, job.time_limit) == ("run.sh", 1, 4, 600.0)


def test_a_dependency_on_an_unknown_job_is_dropped():
    """Slurm 22.05 (the twin) accepts ``-d afterok:99999`` and runs the job: Dependency=(null).
    minislurm used to refuse it ("Job dependency problem")."""
    state = cluster()
    assert build(state, "-d", "afterok:999")[0].dependency is None
    first = build(state)[0]
    state.add(first)
    job = build(state, "-d", f"afterok:999:{first.job_id},afterany:998")[0]
    assert str(job.dependency) == f"afterok:{first.job_id}"
