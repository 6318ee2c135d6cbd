"""Scenario 1's helpers (minislurm.lab.frontier): the job MTBF it lets a reader measure, the
chain it plans, and a reservation the simulator honours from the moment its window opens."""

import subprocess
import time

from minislurm.core.options import parse_options
from minislurm.lab.frontier import TRAIN_SCRIPT, chain_plan, measure_job_mtbf, reservation_replay


def test_a_jobs_mtbf_is_the_nodes_divided_by_its_node_count():
    for node_mtbf, n in ((1000, 1), (44_000, 240), (500, 16)):
        assert abs(measure_job_mtbf(node_mtbf, n) - node_mtbf / n) / (node_mtbf / n) < 0.03


def test_the_chain_is_an_array_run_one_link_at_a_time_within_max_time():
    links, line = chain_plan(21, 1)
    spec, rest = parse_options(line.split()[1:], prog="sbatch", now=0)
    assert links == 21 and rest == ["train.sbatch"]
    assert (len(spec.array.indices), spec.array.max_running, spec.time_limit_min) == (21, 1, 1440)
    assert chain_plan(2.5, 1)[0] == 3


def test_the_reserved_job_starts_when_the_window_opens_and_backfill_fills_the_nodes_before():
    r = reservation_replay(nodes=24, job_nodes=20, weeks=0.5, window_starts_h=12, background=150, evaluations=60)
    assert (r.start_h, r.end_h) == r.window_h  # no pass was due then: the window's opening is one
    assert r.background_done_before_window > 0 and 0 < r.busy_before_window <= 1


def test_the_training_task_waits_a_tenth_of_a_second_a_step_and_resumes_from_its_checkpoint(tmp_path):
    """The task the frontier job runs on every node, run by bash alone: it waits out each step
    (``read -t`` on its pipe, no process started), checkpoints, and a second start goes on."""
    task = TRAIN_SCRIPT.format(steps=12, ckpt=5).split("srun bash -c '", 1)[1].rsplit("'", 1)[0]
    (tmp_path / "ckpt").mkdir()
    env = {"PATH": "/usr/bin:/bin", "SLURM_PROCID": "0"}
    started = time.monotonic()
    first = subprocess.run(["bash", "-c", task], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    took = time.monotonic() - started
    again = subprocess.run(["bash", "-c", task], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert first.stdout.splitlines() == ["task 0 starts at step 0", "task 0 done at step 12"]
    assert took >= 1.1, f"12 steps took {took:.2f} s: the step did not wait"
    assert (tmp_path / "ckpt" / "task0").read_text().strip() == "10"
    assert again.stdout.splitlines() == ["task 0 starts at step 10", "task 0 done at step 12"]


def test_a_failure_in_the_reservation_is_survived_on_a_spare_and_without_one_waits_for_the_repair():
    """Nodes fail in the window: with spares in the reservation the requeued frontier job starts
    again within minutes, on the reservation's healthy nodes; without, it waits for the repair."""
    from minislurm.lab.frontier import reservation_figure
    from minislurm.sim.failures import FailureModel

    failing = FailureModel(mtbf_s=600 * 3600, repair_s=12 * 3600, seed=3)
    size = {"nodes": 24, "job_nodes": 20, "weeks": 0.5, "window_starts_h": 12, "background": 150,
            "evaluations": 60, "failures": failing, "checkpoint_h": 5, "slack_days": 3}
    spared, bare = reservation_replay(spares=2, **size), reservation_replay(spares=0, **size)
    assert spared.restarts >= 1 and bare.restarts >= 1 and spared.reserved == 22
    for run, most in ((spared, 600), (bare, None)):
        segs = run.frontier.segments
        assert [s.state for s in segs] == ["NODE_FAIL"] * run.restarts + ["COMPLETED"]
        assert all(set(s.nodes) <= set(range(run.reserved)) for s in segs)  # always inside the reservation
        gaps = [b.start - a.end for a, b in zip(segs, segs[1:])]
        if most:
            assert max(gaps) <= most  # the requeue delay and a pass: a spare was free
    assert max(b.start - a.end for a, b in zip(bare.frontier.segments, bare.frontier.segments[1:])) >= 11 * 3600
    assert spared.end_h < bare.end_h
    fig = reservation_figure(spared, bare)
    (hits,) = [c for c in fig.axes[0].collections if c.get_gid() == "hits"]
    assert len(hits.get_offsets()) == spared.restarts  # one cross per failure that hit the job
