"""priority/basic and priority/multifactor against hand-computed values (reference section 3.1)."""

from __future__ import annotations

import pytest

from minislurm.core.cluster import PartitionConfig, simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.spec import spec_from_dict
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.sched import priority
from minislurm.sched.priority import basic, multifactor
from minislurm.sched.priority.multifactor import Factors
from minislurm.sched.schedule import priority_order
from minislurm.sched.submit import build_jobs

TOP = 0xFFFF0000


# -- priority/basic ----------------------------------------------------------------------

def basic_lab(lab):
    c = lab(nodes=2, gpus=4)
    c.state.config.priority.type = "priority/basic"
    return c


def test_basic_each_later_job_is_one_lower(lab):
    c = basic_lab(lab)
    jobs = [c.submit(t) for t in (0, 0, 5)]
    assert [j.priority for j in jobs] == [TOP - 1, TOP - 2, TOP - 3]
    assert [j.job_id for j in priority_order(c.state)] == [1, 2, 3]


def test_basic_gives_an_arrays_tasks_the_arrays_priority_so_they_run_in_index_order():
    """Tasks waiting in their array's record have keys, not ids: ranked by key, the highest
    index came first (a replay started task 3 of 0-3 first)."""
    state = ClusterState(simple_cluster(1, cpus=8, mem=8000, gpus=0))
    state.config.priority.type = "priority/basic"
    spec = spec_from_dict({"ntasks": 1, "array": {"indices": [0, 1, 2, 3]}})
    for job in build_jobs(spec, state, first_id=state.new_job_id(), user="alice", now=0.0):
        job.priority = priority.initial(job, state, 0.0)
        state.add(job)
    assert {j.priority for j in state.pending.values()} == {TOP - 1}
    assert [j.array_task_id for j in priority_order(state)] == [0, 1, 2, 3]


def test_basic_nice_lowers_and_negative_nice_raises(lab):
    c = basic_lab(lab)
    a = c.submit(0)
    b = c.submit(0, nice=100)
    d = c.submit(0, nice=-10)
    assert (a.priority, b.priority, d.priority) == (TOP - 1, TOP - 2 - 100, TOP - 3 + 10)
    assert [j.job_id for j in priority_order(c.state)] == [3, 1, 2]


def test_basic_never_below_one():
    assert basic.priority(Job(TOP)) == 1
    assert basic.priority(Job(TOP + 500)) == 1
    assert basic.priority(Job(TOP - 1)) == 1
    assert basic.priority(Job(TOP - 2)) == 2


def test_held_job_gets_zero_under_both_plugins(lab):
    for ptype in ("priority/basic", "priority/multifactor"):
        c = lab()
        c.state.config.priority.type = ptype
        held = c.submit(0, hold="user")
        free = c.submit(0)
        assert held.priority == 0 and free.priority >= 1
        c.state.set_priorities(priority.recompute(c.state, 10.0))
        assert held.priority == 0
        assert [j.job_id for j in priority_order(c.state)] == [free.job_id, held.job_id]


def test_basic_update_leaves_priorities_alone(lab):
    c = basic_lab(lab)
    jobs = [c.submit(0) for _ in range(3)]
    before = [j.priority for j in jobs]
    c.state.set_priorities(priority.recompute(c.state, 10_000.0))
    assert [j.priority for j in jobs] == before


# -- priority/multifactor: each factor ---------------------------------------------------

def mf_state(**weights) -> ClusterState:
    """4 nodes x 32 CPUs (128 CPUs): partition gpu (PriorityJobFactor=10), hi (=20)."""
    cfg = simple_cluster(4, cpus=32, gpus=0)
    names = cfg.partitions[0].nodes
    cfg.partitions[0].priority_job_factor = 10
    cfg.partitions.append(PartitionConfig("hi", nodes=list(names), priority_job_factor=20))
    for k, v in weights.items():
        setattr(cfg.priority, k, v)
    return ClusterState(cfg)


def job(job_id=1, nodes=1, cpus=1, partition="gpu", submit=0.0, **kw) -> Job:
    return Job(job_id, partition=partition, submit_time=submit, num_nodes=nodes, shape=Shape(cpus=cpus), **kw)


def test_age_factor_grows_linearly_then_saturates():
    st = mf_state(weight_age=1000, max_age=1000.0)
    j = job(submit=0.0)
    assert multifactor.factors(j, st, 0.0).age == 0.0
    assert multifactor.factors(j, st, 250.0).age == 250.0
    assert multifactor.factors(j, st, 1000.0).age == 1000.0
    assert multifactor.factors(j, st, 5000.0).age == 1000.0  # min(..., 1)
    assert multifactor.priority(j, st, 5000.0) == 1000


def test_age_counts_from_eligibility_not_submission():
    st = mf_state(weight_age=1000, max_age=1000.0)
    j = job(submit=0.0, begin_time=500.0)
    assert multifactor.factors(j, st, 400.0).age == 0.0  # not yet eligible: no negative age
    assert multifactor.factors(j, st, 750.0).age == 250.0


def test_default_max_age_is_seven_days():
    st = mf_state(weight_age=7000)
    assert multifactor.factors(job(), st, 86400.0).age == 1000.0


def test_job_size_favours_large_jobs_by_default():
    st = mf_state(weight_jobsize=1000)
    # (2/4 nodes + 2*16/128 CPUs) / 2 = (0.5 + 0.25) / 2 = 0.375
    assert multifactor.factors(job(nodes=2, cpus=16), st, 0.0).jobsize == 375.0
    # the whole machine = 1.0
    assert multifactor.factors(job(nodes=4, cpus=32), st, 0.0).jobsize == 1000.0
    # 1 node, 1 CPU: (1/4 + 1/128)/2
    assert multifactor.factors(job(), st, 0.0).jobsize == 1000 * (0.25 + 1 / 128) / 2


def test_priority_favor_small_inverts_job_size():
    st = mf_state(weight_jobsize=1000, favor_small=True)
    # ((4-2)/4 + (128-32)/128) / 2 = (0.5 + 0.75) / 2 = 0.625
    assert multifactor.factors(job(nodes=2, cpus=16), st, 0.0).jobsize == 625.0
    assert multifactor.factors(job(nodes=4, cpus=32), st, 0.0).jobsize == 0.0


def test_partition_factor_is_normalised_to_the_highest_job_factor():
    st = mf_state(weight_partition=5000)
    assert multifactor.factors(job(partition="gpu"), st, 0.0).part == 2500.0  # 5000 * 10/20
    assert multifactor.factors(job(partition="hi"), st, 0.0).part == 5000.0


def test_fairshare_factor_is_looked_up_by_account_and_user():
    st = mf_state(weight_fairshare=10_000)
    fs = {("phys", "alice"): 0.75, ("chem", "alice"): 0.25}
    a = job(user="alice", account="phys")
    assert multifactor.factors(a, st, 0.0, fs).fairshare == 7500.0
    assert multifactor.priority(a, st, 0.0, fs) == 7500
    assert multifactor.priority(job(user="alice", account="chem"), st, 0.0, fs) == 2500
    assert multifactor.factors(job(user="bob", account="phys"), st, 0.0, fs).fairshare == 0.0


def test_weighted_sum_minus_nice_and_the_factors_record():
    st = mf_state(weight_age=1000, weight_fairshare=2000, weight_jobsize=1000,
                  weight_partition=4000, max_age=1000.0)
    j = job(7, nodes=2, cpus=16, partition="gpu", user="alice", account="phys", nice=100)
    f = multifactor.factors(j, st, 500.0, {("phys", "alice"): 0.5})
    # 500 (age) + 1000 (fs) + 375 (size) + 2000 (partition) - 100 (nice)
    assert f == Factors(7, "alice", "phys", "gpu", age=500.0, fairshare=1000.0, jobsize=375.0,
                        part=2000.0, nice=100, priority=3775)


def test_negative_nice_raises_priority_even_with_all_weights_zero():
    st = mf_state()
    assert multifactor.priority(job(nice=-50), st, 0.0) == 50


def test_sum_below_one_is_clamped_to_one():
    st = mf_state(weight_age=100, max_age=1000.0)
    assert multifactor.priority(job(), st, 0.0) == 1
    assert multifactor.priority(job(nice=500), st, 1000.0) == 1  # 100 - 500


def test_fractional_sum_is_truncated_like_slurms_uint32_cast():
    # Slurm: priority = sum of weighted factors - nice (a double), clamped to >= 1, then cast
    # to an integer (truncation).  4 * 7/8 = 3.5 -> 3; 3.5 - 1 (nice) = 2.5 -> 2.
    st = mf_state(weight_age=4, max_age=8.0)
    assert multifactor.priority(job(), st, 7.0) == 3
    assert multifactor.priority(job(nice=1), st, 7.0) == 2
    st = mf_state(weight_jobsize=3)  # 3 * (1/4 + 1/128)/2 = 0.3867 -> clamped to 1
    assert multifactor.priority(job(), st, 0.0) == 1


def test_priority_is_capped_at_32_bits():
    top = 0xFFFFFFFF
    st = mf_state(weight_age=top, weight_partition=top, max_age=10.0)
    assert multifactor.priority(job(partition="hi"), st, 10.0) == top


# -- queue order -------------------------------------------------------------------------

def test_all_weights_zero_every_job_is_one_and_order_is_submit_time_then_id(lab):
    c = lab()
    j1 = c.submit(10)
    j2 = c.submit(5)
    j3 = c.submit(5)
    assert [j.priority for j in (j1, j2, j3)] == [1, 1, 1]
    c.state.set_priorities(priority.recompute(c.state, 1000.0))
    assert [j.priority for j in (j1, j2, j3)] == [1, 1, 1]
    assert [j.job_id for j in priority_order(c.state)] == [j2.job_id, j3.job_id, j1.job_id]


def test_update_resorts_the_queue_and_the_risen_job_starts_first(lab):
    c = lab(nodes=1, gpus=4)
    c.state.config.priority.weight_fairshare = 1000
    first = c.submit(0, gpus=4, user="a", account="acct")
    second = c.submit(1, gpus=4, user="b", account="acct")
    assert [j.job_id for j in priority_order(c.state)] == [first.job_id, second.job_id]
    epoch = c.state.order_epoch
    c.state.set_priorities(priority.recompute(c.state, 2.0, {("acct", "a"): 0.5, ("acct", "b"): 1.0}))
    assert c.state.order_epoch == epoch + 1
    assert (first.priority, second.priority) == (500, 1000)
    assert [j.job_id for j in priority_order(c.state)] == [second.job_id, first.job_id]
    c.run(2.0)
    assert second.state is JobState.RUNNING and first.state is JobState.PENDING


def test_update_with_age_lets_an_old_job_overtake_a_partition_boost(lab):
    c = lab(nodes=1, gpus=4)
    cfg = c.state.config.priority
    cfg.weight_age, cfg.max_age = 1000, 1000.0
    old = c.submit(0, gpus=4)
    new = c.submit(900, gpus=4, nice=-500)
    c.state.set_priorities(priority.recompute(c.state, 900.0))
    assert (old.priority, new.priority) == (900, 500)
    assert priority_order(c.state)[0] is old


@pytest.mark.parametrize("now", [0.0, 1e9])
def test_initial_equals_update_for_multifactor(lab, now):
    c = lab()
    cfg = c.state.config.priority
    cfg.weight_age, cfg.weight_jobsize = 1000, 1000
    j = c.submit(0, nodes=2, cpus=16)
    expected = priority.initial(j, c.state, now)
    c.state.set_priorities(priority.recompute(c.state, now))
    assert j.priority == expected
