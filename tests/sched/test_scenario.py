"""The reference scenario, with the outcome real Slurm 22.05 gives (2 nodes x 4 GPUs)."""

from minislurm.core.states import JobState


def test_backfill_scenario_exact(lab):
    c = lab(nodes=2, gpus=4)
    a = c.submit(0, nodes=1, gpus=4, minutes=2, name="A")
    c.run(0)
    assert a.state is JobState.RUNNING and a.alloc.gpus == ((0, 1, 2, 3),)

    b = c.submit(10, nodes=2, gpus=4, minutes=5, name="B")
    r = c.run(10)
    assert b.state is JobState.PENDING
    assert c.reason(b) == "Resources"
    assert r.expected_start[b.job_id] == a.start_time + 2 * 60

    cjob = c.submit(20, nodes=1, gpus=2, minutes=1, name="C")
    r = c.run(20)
    assert cjob.state is JobState.RUNNING
    assert [s.backfilled for s in r.starts] == [True]
    assert c.state.nodes.names[cjob.alloc.nodes[0]] == "node02"
    assert cjob.alloc.gpus == ((0, 1),)

    d = c.submit(30, nodes=1, gpus=2, minutes=10, name="D")
    r = c.run(30)
    assert d.state is JobState.PENDING
    assert c.reason(d) == "Priority"
    assert c.reason(b) == "Resources"
    # B keeps its start; D is planned after B (conservative: every tested job gets a promise).
    assert r.expected_start[b.job_id] == 120
    assert r.expected_start[d.job_id] == 120 + 5 * 60


def test_main_stage_alone_does_not_backfill(lab):
    c = lab(nodes=2, gpus=4)
    c.submit(0, gpus=4, minutes=2)
    c.run(0)
    b = c.submit(10, nodes=2, gpus=4, minutes=5)
    small = c.submit(20, gpus=2, minutes=1)
    r = c.run(20, backfill=False)
    assert r.starts == () and r.expected_start == {}
    assert c.reason(b) == "Resources" and c.reason(small) == "Priority"
    c.run(21, backfill=True)
    assert small.state is JobState.RUNNING


def test_fifo_policy_never_backfills(lab):
    c = lab(nodes=2, gpus=4, policy="fifo")
    c.submit(0, gpus=4, minutes=2)
    c.run(0)
    c.submit(10, nodes=2, gpus=4, minutes=5)
    small = c.submit(20, gpus=2, minutes=1)
    c.run(20)
    assert small.state is JobState.PENDING and c.reason(small) == "Priority"


def test_easy_lets_a_later_job_overtake_all_but_the_first(lab):
    # One node busy for 10 min.  B (2 nodes) is promised t=600.  D (1 node) is promised
    # after B under conservative; under EASY it gets no promise, so E (1 node, 30 min)
    # may take node02 now as long as it does not delay B... it would, so E waits;
    # but F (1 node, 5 min) fits before B's start under both.
    for policy, d_expected in (("conservative", True), ("easy", False)):
        c = lab(nodes=2, gpus=4, policy=policy)
        c.submit(0, gpus=4, minutes=10)
        c.run(0)
        b = c.submit(1, nodes=2, gpus=4, minutes=10)
        d = c.submit(2, gpus=4, minutes=30)
        f = c.submit(3, gpus=4, minutes=5)
        r = c.run(5)
        assert r.expected_start[b.job_id] == 600
        assert (d.job_id in r.expected_start) is d_expected
        assert f.state is JobState.RUNNING


def test_backfilled_job_goes_where_it_delays_no_promise(lab):
    c = lab(nodes=2, gpus=4)
    c.submit(0, gpus=3, minutes=1)  # node01, frees at 60
    c.submit(0, gpus=3, minutes=2)  # node02, frees at 120
    c.run(0)
    high = c.submit(1, gpus=4, minutes=10)
    low = c.submit(2, gpus=1, minutes=5)
    r = c.run(5)
    assert r.expected_start[high.job_id] == 60 and r.planned_nodes[high.job_id] == (0,)
    # low fits now on both nodes; on node01 it would delay high, so it must take node02.
    assert low.state.name == "RUNNING" and low.alloc.nodes == (1,)
    assert low.alloc.gpus == ((3,),)


def test_job_beyond_the_window_gets_no_promise(lab):
    c = lab(nodes=1, gpus=4, bf_window=3600)
    c.submit(0, gpus=4, minutes=120)
    c.run(0)
    late = c.submit(1, gpus=4, minutes=10)
    r = c.run(2)
    assert late.job_id not in r.expected_start and c.reason(late) == "Resources"


def test_bf_max_job_test_limits_promises(lab):
    c = lab(nodes=1, gpus=4, bf_max_job_test=2)
    c.submit(0, gpus=4, minutes=10)
    c.run(0)
    waiting = [c.submit(1, gpus=4, minutes=10) for _ in range(4)]
    r = c.run(2)
    assert sorted(r.expected_start) == [waiting[0].job_id, waiting[1].job_id]
    assert [c.reason(j) for j in waiting] == ["Resources", "Priority", "Priority", "Priority"]
