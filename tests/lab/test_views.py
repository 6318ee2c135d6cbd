"""Lab views driven headlessly: set a control's .value, check the model result and the figure."""

from __future__ import annotations

import pytest

from minislurm.lab import BackfillPlayground, FailureExplorer, PriorityExplorer, TraceExplorer
from minislurm.lab import replays
from minislurm.lab.view import View
from minislurm.sim.replay import replay


def lines(view: View) -> dict[str, object]:
    return {ln.get_gid(): ln for ln in view.fig.axes[0].lines if ln.get_gid()}


# -- backfill playground ---------------------------------------------------------------------

def test_playground_first_state_backfills_the_short_eval():
    pg = BackfillPlayground()
    r = pg.result
    assert r.policy == "conservative" and r.backfilled == ["eval"]
    assert r.first_promise("pretrain").start == 180 * 60 and r.start("pretrain") == 120 * 60
    assert pg.png.startswith(b"\x89PNG") and "eval" in pg.table.value and "backfill" in pg.table.value


def test_playground_shorter_limit_lets_the_long_eval_backfill():
    pg = BackfillPlayground()
    assert pg.result.start("eval-long") > pg.result.start("pretrain")
    pg.controls["eval-long"]["limit"].value = 100  # minutes: now it ends before pretrain's promise
    pg.controls["eval-long"]["runtime"].value = 90
    assert pg.result.backfilled == ["eval", "eval-long"]
    assert pg.result.start("eval-long") == 40 * 60  # when eval frees node02's last two GPUs
    assert any(p.get_gid() == "run:eval-long" and p.get_x() == pytest.approx(40 / 60)  # hours
               for p in pg.fig.axes[0].patches)


def test_playground_policy_buttons_change_the_schedule_and_title():
    pg = BackfillPlayground()
    pg.policy.value = "fifo"
    assert pg.result.backfilled == [] and pg.result.promises == {}
    assert pg.fig.axes[0].get_title().startswith("fifo")
    pg.policy.value = "easy"
    assert pg.result.policy == "easy" and pg.result.backfilled == ["eval"]


def test_playground_bounds_keep_requests_on_the_cluster():
    pg = BackfillPlayground(nodes=2, gpus_per_node=4)
    pg.controls["pretrain"]["nodes"].value = 5
    assert pg.controls["pretrain"]["nodes"].value == 2 and pg.error is None


def test_view_shows_model_errors_instead_of_raising():
    class Broken(View):
        def compute(self):
            raise ValueError("Requested node configuration is not available")

    v = Broken()
    v.refresh()
    assert v.error.startswith("Requested node") and "error" in v.table.value and v.fig is None


# -- priority explorer -----------------------------------------------------------------------

def test_priority_explorer_first_state():
    pe = PriorityExplorer()
    r = pe.result
    assert r.order == ["long-eval", "eval-suite", "ablation", "pretrain-7b"]
    assert r.fairshare[("eval", "carol")] == 1.0  # the under-served account's user ranks first
    assert "PRIORITY" in pe.table.value
    bars = [p for p in pe.fig.axes[0].patches if p.get_gid() == "fairshare:eval-suite"]
    assert len(bars) == 1 and bars[0].get_width() == pytest.approx(1000.0)


def test_priority_explorer_job_size_weight_favours_the_big_job():
    pe = PriorityExplorer()
    pe.weights["fairshare"].value = 0
    pe.weights["age"].value = 0
    pe.weights["jobsize"].value = 10000
    assert pe.result.order[0] == "pretrain-7b"
    pe.weights["favor_small"].value = True
    assert pe.result.order[0] == "eval-suite"  # the smallest job (1 node, 4 GPUs)


def test_priority_explorer_half_life_forgets_old_usage():
    pe = PriorityExplorer()
    week = pe.result.fairshare
    assert week[("research", "alice")] < week[("research", "bob")]
    pe.weights["half_life_days"].value = 1.0  # alice's usage was 10 days ago: almost forgotten
    day = pe.result
    assert day.fairshare[("research", "alice")] > day.fairshare[("research", "bob")]
    assert day.order.index("pretrain-7b") < day.order.index("ablation")


def test_priority_explorer_classic_fair_share_is_continuous():
    pe = PriorityExplorer()
    pe.weights["fair_tree"].value = False
    f = pe.result.fairshare
    assert all(0.0 < v < 1.0 for v in f.values())
    assert sorted(f.values()) != [1 / 3, 2 / 3, 1.0]


# -- trace explorer --------------------------------------------------------------------------

def test_trace_explorer_matches_minislurm_sim_replay():
    te = TraceExplorer()
    expected = replay(replays.options("lesson"), out=None)
    got = te.result.summary
    for key in ("jobs", "utilization", "wait_mean_s", "bsld_mean", "backfilled", "makespan_s", "passes"):
        assert got[key] == expected[key], key
    assert got["backfilled"] == 6 and "backfilled" in te.table.value
    busy = lines(te)["busy"]
    assert max(busy.get_ydata()) <= 32  # 4 nodes x 8 GPUs


def test_trace_explorer_policy_and_nodes():
    te = TraceExplorer()
    te.policy.value = "fifo"
    assert te.result.summary["backfilled"] == 0
    fifo_wait = te.result.summary["wait_mean_s"]
    te.nodes.value = 8
    assert te.result.summary["nodes"] == 8 and te.result.summary["wait_mean_s"] < fifo_wait


def test_trace_explorer_switching_trace_sets_its_machine():
    te = TraceExplorer()
    te.trace.value = "philly"
    assert te.nodes.value == 64 and te.jobs.value == 2000
    te.jobs.value = 300
    assert te.result.summary["jobs"] == 300 and te.result.capacity.gpus == 64 * 8
    assert min(r.submit for r in te.result.records) == 0  # the slice starts at its first job


def test_replay_slice_from_the_middle_of_a_trace():
    from minislurm.sim.traces import read_trace

    part = replays.replay_records(replays.options("philly", limit_jobs=20), skip_jobs=5000)
    assert part.summary["jobs"] == 20
    whole = read_trace(replays.PRESETS["philly"].path, cores_per_node=32, gpus_per_node=8, limit=5020)
    subs = sorted(j.submit for j in whole.jobs)
    assert sorted(r.submit for r in part.records) == [t - subs[5000] for t in subs[5000:]]


# -- failure explorer ------------------------------------------------------------------------

def test_failure_explorer_tradeoff_shape():
    fe = FailureExplorer()
    pts = fe.result
    lost = [p.lost_gpu_h for p in pts]
    overhead = [p.overhead_gpu_h(60) for p in pts]
    assert lost == sorted(lost)  # rarer checkpoints lose more work
    assert overhead == sorted(overhead, reverse=True)  # and cost less to write
    assert fe.chosen.interval_s == 3600
    assert list(lines(fe)["lost"].get_ydata()) == lost


def test_failure_explorer_cost_reuses_the_replays():
    fe = FailureExplorer()
    before = replays.sweep_point.cache_info().misses
    fe.cost.value = 600
    assert replays.sweep_point.cache_info().misses == before  # no new simulation
    assert fe.chosen.overhead_gpu_h(600) == pytest.approx(10 * fe.chosen.overhead_gpu_h(60))
    assert list(lines(fe)["overhead"].get_ydata()) == [p.overhead_gpu_h(600) for p in fe.result]


def test_failure_explorer_more_reliable_nodes_fail_less():
    fe = FailureExplorer()
    failures = fe.chosen.failures
    fe.mtbf.value = 10000
    assert fe.chosen.failures < failures / 3
    young = lines(fe)["young"].get_xdata()[0]
    assert young == pytest.approx(replays.young_daly(60, 10000 * 3600) / 3600)
