"""The srun layout model and the inspector: predicted without a cluster, and checked against one."""

from __future__ import annotations

import pytest

from minislurm.core.layout import block
from minislurm.lab import SrunInspector
from minislurm.lab.srun_model import format_layout, predict, run_live, srun_args, temporary_cluster
from minislurm.slurmd.env import step_env, task_env
from minislurm.train.distenv import from_slurm

CASES = [
    ["--nodes=2", "--ntasks-per-node=4", "--gres=gpu:4"],
    ["--ntasks=8", "--gres=gpu:4"],
    ["--nodes=2", "--ntasks=6", "--gres=gpu:4"],
    ["--nodes=2", "--ntasks=3", "--ntasks-per-node=2"],
    ["--ntasks=4", "--gpus-per-task=1"],
    ["--nodes=2"],
    [],
    ["--nodelist=gpu02", "--ntasks=2", "--gres=gpu:2", "--gpus-per-task=1"],  # -w, and each task's own GPU
]


def test_block_layout_and_rank_mapping():
    lay = predict(["--nodes=2", "--ntasks-per-node=4", "--gres=gpu:4"])
    assert lay.nodes == ["gpu01", "gpu02"] and lay.tasks_per_node == "4(x2)"
    assert [(t.node, t.procid, t.localid, t.nodeid) for t in lay.tasks[3:5]] == [("gpu01", 3, 3, 0), ("gpu02", 4, 0, 1)]
    assert all(t.rank == t.procid and t.local_rank == t.localid and t.world_size == 8 for t in lay.tasks)
    assert {t.master_addr for t in lay.tasks} == {"gpu01"} and all(t.visible == (0, 1, 2, 3) for t in lay.tasks)
    assert [t.device for t in lay.tasks] == [0, 1, 2, 3] * 2 and lay.problems() == []


def test_model_agrees_with_the_env_code_it_is_built_on():
    """Task 5 of -N2 --ntasks-per-node=4, built by hand from slurmd.env and distenv."""
    counts = block(8, 2)
    job = {"job_id": 1, "name": "python", "nodes": ["gpu01", "gpu02"], "partition": "gpu", "account": "default",
           "cpus_per_node": [4, 4], "cluster": "minislurm", "submit_dir": "/", "submit_host": "login",
           "user": "user", "uid": 1000, "gid": 1000, "start_time": 0}
    step = {"step_id": 0, "nodes": job["nodes"], "tasks_per_node": counts, "task_ids": [[0, 1, 2, 3], [4, 5, 6, 7]],
            "ntasks": 8, "step_gpus": {"gpu01": [0, 1, 2, 3], "gpu02": [0, 1, 2, 3]}}
    env = task_env(step_env(job, step, "gpu02", {}), procid=5, localid=1)
    dist = from_slurm(env, resolve_host=lambda h: h)
    t = predict(["--nodes=2", "--ntasks-per-node=4", "--gres=gpu:4"]).tasks[5]
    assert (t.rank, t.local_rank, t.world_size, t.local_world_size, t.master_port) == (
        dist.rank, dist.local_rank, dist.world_size, dist.local_world_size, dist.master_port)
    assert env["SLURM_STEP_TASKS_PER_NODE"] == "4(x2)" and env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"


def test_classic_mistakes_are_named():
    packed = predict(["--ntasks=8", "--gres=gpu:4"])
    assert packed.nodes == ["gpu01"] and [t.rank for t in packed.tasks if t.device is None] == [4, 5, 6, 7]
    assert "rank(s) 4,5,6,7 have no GPU" in packed.problems()[0]
    idle = predict(["-N2", "--ntasks-per-node=1", "--gres=gpu:4"]).problems()
    assert idle == [f"gpu0{n}: GPU(s) 1,2,3 allocated but used by no rank" for n in (1, 2)]
    bound = predict(["--ntasks=4", "--gpus-per-task=1"])
    assert [t.visible for t in bound.tasks] == [(0,), (1,), (2,), (3,)]  # each task sees its own GPU
    assert "no GPUs allocated" in predict(["-N2"]).problems()[0]


def test_impossible_requests_raise_srun_messages():
    with pytest.raises(ValueError, match="Requested node configuration is not available"):
        predict(["--gres=gpu:8"])
    with pytest.raises(ValueError, match="PartitionNodeLimit"):
        predict(["--nodes=3"])


def test_format_and_args():
    assert srun_args(2, 0, 4, 4, 0) == ["--nodes=2", "--ntasks-per-node=4", "--gres=gpu:4"]
    text = format_layout(predict(["--ntasks=8", "--gres=gpu:4"]))
    assert text.splitlines()[0].split()[:3] == ["node", "NODEID", "PROCID"] and text.count("none!") == 4


def test_inspector_first_state_and_controls():
    ins = SrunInspector()
    assert ins.error is None and ins.measured is None and ins.match is None
    assert ins.result.tasks_per_node == "4(x2)" and "one rank per GPU" in ins.table.value
    assert "--nodes=2 --ntasks-per-node=4 --gres=gpu:4" in ins.command.value
    ins.per_node.value = 0
    ins.nodes.value = 0
    ins.ntasks.value = 8
    assert ins.result.nodes == ["gpu01"] and "have no GPU" in ins.table.value
    gids = {p.get_gid() for p in ins.fig.axes[0].patches}
    assert "nogpu:gpu01" in gids and "gpu:gpu02:0" in gids  # gpu02 drawn greyed: not in the step
    ins.nodes.value = 3
    assert "PartitionNodeLimit" in ins.error


@pytest.mark.daemons
def test_prediction_matches_a_live_cluster():
    """The one test here that starts a cluster: every case run for real, row by row."""
    with temporary_cluster(nodes=2, gpus_per_node=4) as cluster:
        for args in CASES:
            live = run_live(cluster, args)
            model = predict(args, job_id=live.job_id)
            assert len(live.tasks) == len(model.tasks), args
            assert all(a.same_as(b) for a, b in zip(live.tasks, model.tasks)), args
            assert live.tasks == model.tasks, args  # the port too, once the job ids agree
            assert live.problems() == model.problems(), args
        ins = SrunInspector(cluster=cluster, live=True)
        assert ins.match is True and ins.measured is not None and "matches the prediction" in ins.table.value
