"""Scenario 1's helpers (minislurm.lab.frontier): the job MTBF it lets a reader measure, the
chain it plans, and a reservation the simulator honours from the moment its window opens."""

from minislurm.core.options import parse_options
from minislurm.lab.frontier import chain_plan, measure_job_mtbf, reservation_replay


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
