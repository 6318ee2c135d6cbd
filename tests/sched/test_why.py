"""sched/why: a waiting job's plan explained, and what-ifs by the same policy on a copy."""

from __future__ import annotations

from minislurm.core.states import Reason
from minislurm.sched import why
from minislurm.sched.schedule import schedule


def test_explain_names_the_running_job_that_holds_the_plan_and_the_job_ahead(lab):
    c = lab(nodes=2, gpus=4)
    long = c.submit(0, nodes=1, gpus=4, minutes=10, name="long")
    c.run(0)
    wide = c.submit(1, nodes=2, gpus=4, minutes=30, name="wide")
    nxt = c.submit(2, nodes=1, gpus=4, minutes=60, name="next")
    res = c.run(3)
    w = why.explain(c.state, wide.job_id, 3, res.expected_start, res.planned_nodes)
    assert w["reason"] == Reason.RESOURCES and w["expected_start"] == 600
    assert [h["job_id"] for h in w["held_by"]] == [long.job_id] and w["held_by"][0]["ends_by"] == 600
    n = why.explain(c.state, nxt.job_id, 3, res.expected_start, res.planned_nodes)
    assert [a["job_id"] for a in n["ahead"]] == [wide.job_id] and n["reason"] == Reason.PRIORITY


def test_what_if_is_the_policy_on_a_copy_and_changes_nothing(lab):
    c = lab(nodes=2, gpus=4)
    c.submit(0, nodes=1, gpus=4, minutes=10, name="long")
    c.run(0)
    wide = c.submit(1, nodes=2, gpus=4, minutes=30)
    nxt = c.submit(2, nodes=1, gpus=4, minutes=60)
    res = c.run(3)
    before = repr(nxt)
    # wide's promise takes both nodes at 600 s: only a job ending by then starts now, and
    # 9 minutes would fit only if the change came within 57 s (3 + 540 <= 600 < 63 + 540)
    assert why.ACT_WITHIN == 60
    assert why.longest_now(c.state, nxt.job_id, 3) == (8, ["node02"])
    assert why.what_if(c.state, nxt.job_id, 3, time_limit=540)[0] == 3
    assert why.what_if(c.state, nxt.job_id, 63, time_limit=540)[0] != 63
    trials = why.what_ifs(c.state, nxt.job_id, 3, res.expected_start.get(nxt.job_id))
    assert trials[0]["option"] == "--time=8" and trials[0]["start"] == 3 and trials[0]["nodes"] == ["node02"]
    assert repr(c.state.jobs[nxt.job_id]) == before and nxt.pending and wide.pending
    # and it is what the policy then does
    c.state.update(nxt, {"time_limit": 8 * 60.0})
    started = {s.job_id for s in schedule(c.state, 3 + 60).starts}
    assert started == {nxt.job_id}
