"""Submission: how a request becomes nodes x per-node shape, time limit and array tasks.

The cluster is 4 nodes x 32 CPUs x 256000 MB x 8 GPUs, partition "gpu".  minislurm gives
every node of a job the same shape: the fullest node's share of the tasks.
"""

from __future__ import annotations

import math

import pytest

from minislurm.core.cluster import simple_cluster
from minislurm.core.options import parse_options
from minislurm.core.state import ClusterState
from minislurm.sched import priority
from minislurm.sched.select.cons_tres import request
from minislurm.sched.submit import build_jobs

NOW = 1000.0


def cluster(**kw) -> ClusterState:
    return ClusterState(simple_cluster(4, cpus=32, mem=256_000, gpus=8, **kw))


def build(state, *words):
    spec, _ = parse_options([*words, "job.sh"], now=NOW)
    jobs = build_jobs(spec, state, first_id=state.next_job_id, user="alice", now=NOW)
    state.used_job_ids(jobs[0].shown_id)  # as the controller does
    return jobs


def layout(*words, state=None):
    """(nodes, tasks, CPUs per node, GPUs per node) of a one-job request."""
    (job,) = build(state or cluster(), *words)
    return job.num_nodes, job.ntasks, job.shape.cpus, job.shape.gpus


# -- nodes, tasks, CPUs and GPUs -------------------------------------------------------------

@pytest.mark.parametrize("words, expected", [
    ((), (1, 1, 1, 0)),
    (("-N", "2", "--ntasks-per-node=4", "-c", "2"), (2, 8, 8, 0)),
    (("-n", "64"), (2, 64, 32, 0)),  # 32-CPU nodes: two of them
    (("-n", "65"), (3, 65, 22, 0)),  # ceil(65 / 3) tasks on the fullest node
    (("-n", "8", "-c", "8"), (2, 8, 32, 0)),
    (("-N", "4", "-n", "2"), (2, 2, 1, 0)),  # fewer tasks than nodes: the node count shrinks
    (("--gpus=16",), (2, 2, 1, 8)),  # 8-GPU nodes: two of them, 8 each
    (("--gpus=8",), (1, 1, 1, 8)),
    (("--gpus=4", "-N", "2"), (2, 2, 1, 2)),
    (("--gpus-per-task=1", "-n", "4"), (1, 4, 4, 4)),
    (("--gpus-per-task=1", "-n", "12"), (2, 12, 6, 6)),  # at most 8 tasks' GPUs fit a node
    (("--gpus-per-task=2", "-n", "8"), (2, 8, 4, 8)),  # 4 tasks x 2 GPUs per node
    (("--gres=gpu:4", "-N", "2"), (2, 2, 1, 4)),  # --gres is per node
    (("--gpus-per-node=2", "-N", "3"), (3, 3, 1, 2)),
    (("-N", "2", "--ntasks-per-node=8", "--gres=gpu:8", "-c", "4"), (2, 16, 32, 8)),
])
def test_layout(words, expected):
    assert layout(*words) == expected


def test_required_nodes_set_the_node_count_and_spread_the_tasks():
    assert layout("-w", "node[01-02]") == (2, 2, 1, 0)
    assert layout("-n", "4", "-w", "node[01-02]") == (2, 4, 2, 0)
    (job,) = build(cluster(), "-w", "node[02-03]", "-x", "node04")
    assert job.req_nodes == frozenset({"node02", "node03"}) and job.exc_nodes == frozenset({"node04"})


@pytest.mark.parametrize("words", [("--gres=gpu:a100:2",), ("--gpus=a100:2",), ("--gpus-per-node=a100:2",)])
def test_gpu_type_is_carried(words):
    config = simple_cluster(4, cpus=32, mem=256_000, gpus=8)
    for node in config.nodes:
        node.gpu_type = "a100"
    (job,) = build(ClusterState(config), *words)
    assert (job.shape.gpus, job.shape.gpu_type) == (2, "a100")


# -- memory -----------------------------------------------------------------------------------

def test_mem_zero_means_all_of_each_nodes_memory():
    state = cluster()
    (job,) = build(state, "--mem=0")
    assert job.shape.mem == -1
    cpu, mem, gpu = request(job, state.nodes)
    assert list(mem) == [256_000] * 4


@pytest.mark.parametrize("words, config, expected", [
    (("--mem=64G",), {}, 65_536),
    (("--mem=1000",), {"def_mem_per_cpu": 2000}, 1000),  # an explicit request wins
    (("--mem-per-cpu=1000", "-c", "4"), {}, 4000),
    (("-c", "4"), {"def_mem_per_cpu": 2000}, 8000),  # DefMemPerCPU x CPUs per node
    (("-N", "2", "--ntasks-per-node=4"), {"def_mem_per_cpu": 500}, 2000),
    ((), {"def_mem_per_node": 1500}, 1500),
    ((), {}, 0),  # no default: memory is not counted
])
def test_memory_per_node(words, config, expected):
    state = cluster()
    for key, value in config.items():
        setattr(state.config, key, value)
    assert build(state, *words)[0].shape.mem == expected


# -- exclusive ----------------------------------------------------------------------------------

def test_exclusive_takes_every_cpu_and_gpu_of_its_nodes():
    state = cluster()
    (job,) = build(state, "--exclusive", "-N", "2")
    assert job.exclusive is True and job.shape.cpus == 1
    cpu, mem, gpu = request(job, state.nodes)
    assert (list(cpu), list(gpu)) == ([32] * 4, [8] * 4)
    assert build(state)[0].exclusive is False


def test_exclusive_partition_makes_every_job_exclusive():
    state = cluster()
    state.partitions["gpu"].exclusive = True
    assert build(state)[0].exclusive is True


# -- time limit -------------------------------------------------------------------------------------

@pytest.mark.parametrize("words, default_time, max_time, expected", [
    (("-t", "30"), None, math.inf, 1800.0),
    (("-t", "1-00:00:00"), None, math.inf, 86_400.0),
    (("-t", "30"), 600.0, 3600.0, 1800.0),
    ((), 600.0, 3600.0, 600.0),  # DefaultTime
    ((), None, 3600.0, 3600.0),  # else MaxTime
    ((), None, math.inf, math.inf),
])
def test_time_limit(words, default_time, max_time, expected):
    state = cluster()
    part = state.partitions["gpu"]
    part.default_time, part.max_time = default_time, max_time
    assert build(state, *words)[0].time_limit == expected


# -- arrays -----------------------------------------------------------------------------------------

def test_an_array_takes_one_id_and_its_tasks_wait_in_its_record():
    """Slurm 22.05: ``sbatch -a 0-3`` uses one job id; the tasks get theirs as they start."""
    state = cluster()
    state.next_job_id = 100
    tasks = build(state, "-a", "0-3%2")
    assert all(t.job_id < 0 for t in tasks) and len({t.job_id for t in tasks}) == 4
    assert [t.shown_id for t in tasks] == [100] * 4
    assert [t.array_job_id for t in tasks] == [100] * 4
    assert [t.array_task_id for t in tasks] == [0, 1, 2, 3]
    assert [t.array_max_running for t in tasks] == [2] * 4
    assert [t.display_id for t in tasks] == ["100_0", "100_1", "100_2", "100_3"]
    assert state.next_job_id == 101


@pytest.mark.parametrize("text, indices", [("1,5,7", [1, 5, 7]), ("0-15:4", [0, 4, 8, 12]), ("3", [3])])
def test_array_task_ids_follow_the_index_list(text, indices):
    state = cluster()
    tasks = build(state, f"--array={text}")
    assert [t.array_task_id for t in tasks] == indices
    assert {t.array_max_running for t in tasks} == {None}
    assert {t.shown_id for t in tasks} == {1} and state.next_job_id == 2


def test_array_tasks_share_the_request():
    state = cluster()
    tasks = build(state, "-a", "0-1", "-N", "2", "--gres=gpu:4", "-t", "5", "-J", "sweep")
    assert {(t.num_nodes, t.shape.gpus, t.time_limit, t.name) for t in tasks} == {(2, 4, 300.0, "sweep")}


def test_queued_array_registers_its_tasks():
    state = cluster()
    tasks = build(state, "-a", "0-2")
    for t in tasks:
        t.priority = priority.initial(t, state, NOW)
        state.add(t)
    assert state.array_tasks[tasks[0].array_job_id] == [t.job_id for t in tasks]


def _alloc(state):
    from minislurm.core.job import Allocation
    return Allocation((0,), (1,), (0,), ((),))


def test_tasks_take_new_ids_as_they_start_and_the_last_keeps_the_array_id():
    """As slurmctld splits a task off the array's record: the next free id each time, and the
    array's own id for the task left last in the record."""
    state = cluster()
    state.next_job_id = 100
    tasks = build(state, "-a", "0-3")
    for t in tasks:
        state.add(t)
    other = build(state, "--wrap=true")[0]  # an id taken between the starts
    state.add(other)
    assert other.job_id == 101
    for t in (tasks[0], tasks[2], tasks[1]):
        state.start(t, _alloc(state), NOW)
    assert [t.job_id for t in tasks[:3]] == [102, 104, 103]
    state.finish(tasks[0], tasks[0].state.COMPLETED, NOW)
    state.start(tasks[3], _alloc(state), NOW)
    assert tasks[3].job_id == 100 and state.next_job_id == 105
    assert sorted(state.array_tasks[100]) == [100, 102, 103, 104]
    assert all(state.jobs[t.job_id] is t for t in tasks) and not any(k < 0 for k in state.jobs)
    assert [t.display_id for t in tasks] == ["100_0", "100_1", "100_2", "100_3"]


def test_a_task_left_last_by_cancelled_ones_keeps_the_array_id():
    state = cluster()
    tasks = build(state, "-a", "0-2")
    for t in tasks:
        state.add(t)
    state.finish(tasks[0], tasks[0].state.CANCELLED, NOW)  # still in the record, shown as 1_0
    state.start(tasks[2], _alloc(state), NOW)
    state.start(tasks[1], _alloc(state), NOW)
    assert (tasks[0].shown_id, tasks[2].job_id, tasks[1].job_id) == (1, 2, 1)


def test_an_arrays_waiting_tasks_keep_its_place_in_the_queue():
    """Ties in priority and submit time go by job id; an array's tasks, all id J until they
    start, sit between J-1 and J+1 in task order (as its one record does in Slurm)."""
    from minislurm.sched.order import sort_key
    state = cluster()
    before = build(state, "--wrap=true")[0]
    tasks = build(state, "-a", "2,10,3")
    after = build(state, "--wrap=true")[0]
    jobs = [after, *tasks, before]
    for j in jobs:
        j.submit_time = NOW
    assert sorted(jobs, key=sort_key(state)) == \
        [before, *sorted(tasks, key=lambda t: t.array_task_id), after]
