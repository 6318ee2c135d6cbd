"""A step's nodes, tasks, CPUs and GPUs inside its job (core/stepfit.step_layout): the one layout
the controller gives a step, slurmd binds and the srun inspector predicts.  What a step holds
beside its job's running steps is as Slurm 22.05 shares it out (twin session step_gpus)."""

from __future__ import annotations

import pytest

from minislurm.core import errors
from minislurm.core.layout import task_gpus
from minislurm.core.stepfit import StepBusy, StepLayoutError, StepRequest, step_layout

NODES, CPUS, GPUS = ["a", "b", "c"], [8, 8, 4], {"a": [0, 1, 2, 3], "b": [4, 5, 6, 7], "c": [0, 1]}
ONE = (["c1"], [8], {"c1": [0, 1, 2, 3]})  # the session's job: -N1 -n8 --gres=gpu:4


def lay(req: StepRequest = StepRequest(), **kw):
    return step_layout(NODES, CPUS, GPUS, req, **kw)


def test_a_step_takes_the_whole_job_one_task_a_node_by_default():
    step = lay()
    assert (step.nodes, step.tasks_per_node, step.task_ids, step.ntasks) == (NODES, [1, 1, 1], [[0], [1], [2]], 3)
    assert step.gpus == GPUS and step.cpus == CPUS


def test_the_jobs_ntasks_fills_nodes_in_block_order_unless_n_nodes_is_given():
    assert lay(job_ntasks=10).tasks_per_node == [8, 1, 1]  # a full first
    assert lay(StepRequest(nodes=2), job_ntasks=10).tasks_per_node == [1, 1]
    assert lay(StepRequest(ntasks=2)).nodes == ["a", "b"]  # fewer tasks than nodes


def test_nodelist_and_node_count_pick_the_jobs_nodes_in_its_order():
    step = lay(StepRequest(nodelist=("c", "a"), ntasks_per_node=2))
    assert step.nodes == ["a", "c"] and step.task_ids == [[0, 1], [2, 3]]
    with pytest.raises(StepLayoutError, match="Requested node configuration is not available"):
        lay(StepRequest(nodelist=("z",)))
    with pytest.raises(StepLayoutError, match="Requested node configuration is not available"):
        lay(StepRequest(nodes=4))


def test_cpus_and_gpus_beyond_the_jobs_are_refused_with_slurms_reasons():
    with pytest.raises(StepLayoutError, match="More processors requested than permitted"):
        lay(StepRequest(ntasks=6, cpus_per_task=4))
    with pytest.raises(StepLayoutError, match=r"Invalid generic resource \(gres\) specification"):
        lay(StepRequest(gpus_per_node=3))  # c holds only two
    assert lay(StepRequest(nodes=2, gpus_per_node=1)).gpus == {"a": [0], "b": [4]}


def test_refusals_22_05_explains_with_a_line_of_their_own():
    with pytest.raises(StepLayoutError) as gres:
        step_layout(*ONE, StepRequest(gpus_per_node=5), job_gpu_request=("node", 4))
    assert (str(gres.value), gres.value.note) == (
        errors.INVALID_GRES, "Step requested gres_per_node=gpu:5 is more than the job's gres_per_node=gpu:4")
    with pytest.raises(StepLayoutError) as gpus:
        step_layout(*ONE, StepRequest(gpus=5), job_gpu_request=("job", 4))
    assert gpus.value.note == "Step requested gres=gpu:5 is more than the job's gres=gpu:4"
    with pytest.raises(StepLayoutError) as other_terms:  # asked in other terms than the job's: no line
        step_layout(*ONE, StepRequest(gpus=5), job_gpu_request=("node", 4))
    assert (str(other_terms.value), other_terms.value.note) == (errors.INVALID_GRES, None)
    with pytest.raises(StepLayoutError) as none:
        step_layout(["c1"], [8], {"c1": []}, StepRequest(gpus_per_node=1))
    assert none.value.note == "Step requested GRES but job doesn't have GRES"
    with pytest.raises(StepLayoutError, match="Insufficient GRES available in allocation"):
        step_layout(*ONE, StepRequest(ntasks=2, gpus_per_task=3))


def test_gpu_options_take_the_lowest_free_indices_and_no_option_takes_them_all():
    assert step_layout(*ONE, StepRequest(ntasks=1, gpus_per_node=1)).gpus == {"c1": [0]}
    assert step_layout(*ONE, StepRequest(ntasks=1, gpus=1)).gpus == {"c1": [0]}
    assert step_layout(*ONE, StepRequest(ntasks=2, gpus_per_task=1)).gpus == {"c1": [0, 1]}
    assert step_layout(*ONE, StepRequest(ntasks=1)).gpus == {"c1": [0, 1, 2, 3]}
    assert step_layout(*ONE, StepRequest(ntasks=1, gpus_per_node=0)).gpus == {"c1": []}
    held = {"c1": (2, {0, 2})}
    assert step_layout(*ONE, StepRequest(ntasks=1, exact=True, gpus_per_node=2), held=held).gpus == {"c1": [1, 3]}
    two = step_layout(["a", "b"], [8, 8], {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3]}, StepRequest(ntasks=2, gpus=3))
    assert two.gpus == {"a": [0, 1], "b": [0]}  # --gpus=3 on two nodes: 2 + 1 (the twin)


def test_a_step_holds_all_its_jobs_cpus_there_unless_exact_or_c():
    assert step_layout(*ONE, StepRequest(ntasks=1)).cpus == [8]
    assert step_layout(*ONE, StepRequest(ntasks=1, exact=True)).cpus == [1]
    assert step_layout(*ONE, StepRequest(ntasks=1, cpus_per_task=2)).cpus == [2]  # -c implies --exact
    assert step_layout(*ONE, StepRequest(ntasks=2, exact=True, cpus_per_task=3)).cpus == [6]


def test_four_runs_each_get_their_own_gpu_and_a_fifth_waits():
    held: dict = {}
    for gpu in range(4):
        step = step_layout(*ONE, StepRequest(ntasks=1, exact=True, gpus_per_node=1), held=held)
        assert step.gpus == {"c1": [gpu]} and step.cpus == [1]
        cpus, gpus = held.get("c1", (0, set()))
        held["c1"] = (cpus + 1, gpus | {gpu})
    for busy in (StepRequest(ntasks=1, exact=True, gpus_per_node=1),  # no GPU left
                 StepRequest(ntasks=1, exact=True),  # no option: all four GPUs, held
                 StepRequest(ntasks=1, gpus_per_node=0)):  # not exact: all eight CPUs, four held
        with pytest.raises(StepBusy, match=errors.NODES_BUSY):
            step_layout(*ONE, busy, held=held)
    assert step_layout(*ONE, StepRequest(ntasks=1, exact=True, gpus_per_node=0), held=held).cpus == [1]
    overlap = step_layout(*ONE, StepRequest(ntasks=1, overlap=True), held=held)
    assert (overlap.cpus, overlap.gpus) == ([8], {"c1": [0, 1, 2, 3]})  # shares, holds what it would
    with pytest.raises(StepLayoutError, match="More processors") as never:  # never fits: refused, not busy
        step_layout(*ONE, StepRequest(ntasks=9, exact=True), held=held)
    assert not isinstance(never.value, StepBusy)


def test_a_step_on_fewer_nodes_than_its_job_prefers_nodes_without_steps():
    nodes, cpus, gpus = ["c1", "c2"], [4, 4], {"c1": [0, 1, 2, 3], "c2": [0, 1, 2, 3]}
    one = StepRequest(nodes=1, ntasks=1, exact=True, gpus_per_node=1)
    held: dict = {}
    where = []
    for _ in range(6):  # the twin: c1, c2, then c1 while it has room, then c2
        step = step_layout(nodes, cpus, gpus, one, held=held)
        (node,) = step.nodes
        where.append((node, step.gpus[node]))
        c, g = held.get(node, (0, set()))
        held[node] = (c + 1, g | set(step.gpus[node]))
    assert where == [("c1", [0]), ("c2", [0]), ("c1", [1]), ("c1", [2]), ("c1", [3]), ("c2", [1])]


def test_gpus_per_task_gives_each_task_its_own_slice():
    assert [task_gpus([4, 5, 6, 7], local, 2) for local in range(2)] == [[4, 5], [6, 7]]
    assert task_gpus([4, 5], 0, None) is None  # without it every task sees all of the step's GPUs


def test_the_request_srun_sends_counts_gpus_from_its_command_line_only():
    from minislurm.core.options import combine, env_options, parse_options

    env = env_options({"SLURM_NTASKS": "8", "SLURM_MEM_PER_CPU": "1000", "SLURM_GPUS_PER_NODE": "4"},
                      prog="srun", now=0)
    cli, _ = parse_options(["--exact", "--gpus=1", "true"], prog="srun", now=0)
    req = StepRequest.from_options(combine(None, env, cli, prog="srun"), cli, inside=True)
    assert (req.ntasks, req.mem_per_cpu, req.gpus_per_node, req.gpus, req.exact) == (8, 1000, None, 1, True)
    cli, _ = parse_options(["--exclusive", "--gres=gpu:2", "-N1", "true"], prog="srun", now=0)
    req = StepRequest.from_options(cli, cli, inside=True)
    assert (req.exact, req.gpus_per_node, req.nodes) == (True, 2, 1)
    assert StepRequest.of({"nodelist": ["a"], "gpus": None, "name": "x"}) == StepRequest(nodelist=("a",))
