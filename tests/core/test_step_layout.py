"""A step's nodes, tasks and GPUs inside its job (core/layout.step_layout): the one layout the
controller gives a step, slurmd binds and the srun inspector predicts."""

from __future__ import annotations

import pytest

from minislurm.core.layout import StepLayoutError, step_layout, task_gpus

NODES, CPUS, GPUS = ["a", "b", "c"], [8, 8, 4], {"a": [0, 1, 2, 3], "b": [4, 5, 6, 7], "c": [0, 1]}


def test_a_step_takes_the_whole_job_one_task_a_node_by_default():
    lay = step_layout(NODES, CPUS, GPUS)
    assert (lay.nodes, lay.tasks_per_node, lay.task_ids, lay.ntasks) == (NODES, [1, 1, 1], [[0], [1], [2]], 3)
    assert lay.gpus == GPUS


def test_the_jobs_ntasks_fills_nodes_in_block_order_unless_n_nodes_is_given():
    assert step_layout(NODES, CPUS, GPUS, job_ntasks=10).tasks_per_node == [8, 1, 1]  # a full first
    assert step_layout(NODES, CPUS, GPUS, job_ntasks=10, nodes=2).tasks_per_node == [1, 1]
    assert step_layout(NODES, CPUS, GPUS, ntasks=2).nodes == ["a", "b"]  # fewer tasks than nodes


def test_nodelist_and_node_count_pick_the_jobs_nodes_in_its_order():
    lay = step_layout(NODES, CPUS, GPUS, nodelist=["c", "a"], ntasks_per_node=2)
    assert lay.nodes == ["a", "c"] and lay.task_ids == [[0, 1], [2, 3]]
    with pytest.raises(StepLayoutError, match="Requested node configuration is not available"):
        step_layout(NODES, CPUS, GPUS, nodelist=["z"])
    with pytest.raises(StepLayoutError, match="Requested node configuration is not available"):
        step_layout(NODES, CPUS, GPUS, nodes=4)


def test_cpus_and_gpus_beyond_the_jobs_are_refused_with_slurms_reasons():
    with pytest.raises(StepLayoutError, match="More processors requested than permitted"):
        step_layout(NODES, CPUS, GPUS, ntasks=6, cpus_per_task=4)
    with pytest.raises(StepLayoutError, match=r"Invalid generic resource \(gres\) specification"):
        step_layout(NODES, CPUS, GPUS, gpus_per_node=3)  # c holds only two
    assert step_layout(NODES, CPUS, GPUS, nodes=2, gpus_per_node=1).gpus == {"a": [0], "b": [4]}


def test_gpus_per_task_gives_each_task_its_own_slice():
    assert [task_gpus([4, 5, 6, 7], local, 2) for local in range(2)] == [[4, 5], [6, 7]]
    assert task_gpus([4, 5], 0, None) is None  # without it every task sees all of the step's GPUs
