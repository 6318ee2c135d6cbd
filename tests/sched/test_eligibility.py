"""The Filter stage: the pending reasons a pass gives, spelled as Slurm spells them.

Reasons come from ``schedule()`` (``PassResult.reasons``), through the ``lab`` driver.
The order of the checks follows slurmctld: hold, then dependency (job_independent tests it
before the begin time), then BeginTime, then the partition's state and limits
(job_limits_check), then the array throttle and required nodes.
"""

from __future__ import annotations

import pytest

from minislurm.core.cluster import ClusterConfig, NodeConfig, PartitionConfig
from minislurm.core.deps import parse_dependency
from minislurm.core.job import Shape
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.sched.schedule import priority_order


def nodes_of(c, job) -> list[str]:
    return [c.state.nodes.names[n] for n in job.alloc.nodes]


def custom(lab, nodes, partitions, gres=("gpu",)):
    """A lab over a hand-built cluster (typed GPUs, several partitions)."""
    c = lab()
    c.state = ClusterState(ClusterConfig(nodes=nodes, partitions=partitions, gres_types=set(gres)))
    return c


def two_nodes(**gpu_types):
    return [NodeConfig(f"node0{i}", cpus=32, real_memory=64_000, gpus=4, gpu_type=gpu_types.get(f"node0{i}"),
                       state="IDLE") for i in (1, 2)]


# -- holds ---------------------------------------------------------------------------

def test_user_hold_pends_with_priority_zero_and_runs_once_released(lab):
    c = lab()
    held = c.submit(0, hold="user")
    assert held.priority == 0
    c.run(0)
    assert held.state is JobState.PENDING and c.reason(held) == "JobHeldUser"
    held.hold = None
    c.state.reprioritized()
    c.run(1)
    assert held.state is JobState.RUNNING


def test_admin_hold_reason(lab):
    c = lab()
    held = c.submit(0, hold="admin")
    c.run(0)
    assert held.priority == 0 and c.reason(held) == "JobHeldAdmin"


def test_hold_is_reported_for_a_job_the_pass_never_reached(lab):
    # The first job cannot fit, so the main stage stops at it; reasons behind it are derived.
    c = lab(nodes=1, gpus=4)
    c.submit(0, gpus=4, minutes=60)
    c.run(0)
    big = c.submit(1, gpus=4)
    held = c.submit(2, hold="user")
    plain = c.submit(3, gpus=1)
    c.run(5, backfill=False)
    assert (c.reason(big), c.reason(held), c.reason(plain)) == ("Resources", "JobHeldUser", "Priority")


# -- begin time -----------------------------------------------------------------------

def test_begin_time_pends_until_reached(lab):
    c = lab()
    job = c.submit(0, begin_time=100.0)
    c.run(99)
    assert c.reason(job) == "BeginTime"
    c.run(100)
    assert job.state is JobState.RUNNING and job.start_time == 100


def test_unmet_dependency_is_reported_before_begin_time(lab):
    c = lab()
    first = c.submit(0, begin_time=1000.0)
    second = c.submit(0, begin_time=1000.0, dependency=parse_dependency(f"afterok:{first.job_id}"))
    c.run(10)
    assert (c.reason(first), c.reason(second)) == ("BeginTime", "Dependency")


# -- partition state and limits ------------------------------------------------------

@pytest.mark.parametrize("state, reason", [("DOWN", "PartitionDown"), ("INACTIVE", "PartitionInactive")])
def test_partition_state_blocks_queued_jobs(lab, state, reason):
    c = lab()
    job = c.submit(0)
    c.state.partitions["gpu"].state = state
    c.run(0)
    assert job.state is JobState.PENDING and c.reason(job) == reason
    c.state.partitions["gpu"].state = "UP"
    c.run(1)
    assert job.state is JobState.RUNNING


def test_drained_partition_still_runs_jobs_already_queued(lab):
    # slurm.conf: State=DRAIN refuses new submissions, but queued jobs may still be allocated.
    c = lab()
    job = c.submit(0)
    c.state.partitions["gpu"].state = "DRAIN"
    c.run(0)
    assert job.state is JobState.RUNNING


def test_time_limit_over_max_time_pends_with_partition_time_limit(lab):
    c = lab()
    c.state.partitions["gpu"].max_time = 3600.0
    over = c.submit(0, minutes=61)
    at_limit = c.submit(0, minutes=60)
    c.run(0)
    assert over.state is JobState.PENDING and c.reason(over) == "PartitionTimeLimit"
    assert at_limit.state is JobState.RUNNING


def test_down_partition_reason_wins_over_its_limits(lab):
    # _part_access_check skips the limit tests for a partition that cannot schedule.
    c = lab()
    c.state.partitions["gpu"].max_time = 3600.0
    job = c.submit(0, minutes=600)
    c.state.partitions["gpu"].state = "DOWN"
    c.run(0)
    assert c.reason(job) == "PartitionDown"


def test_more_nodes_than_max_nodes_pends_with_partition_node_limit(lab):
    c = lab(nodes=2)
    c.state.partitions["gpu"].max_nodes = 1
    two = c.submit(0, nodes=2)
    one = c.submit(0, nodes=1)
    c.run(0)
    assert c.reason(two) == "PartitionNodeLimit"
    assert one.state is JobState.RUNNING


def test_more_cpus_than_the_partition_has_pends_with_partition_config(lab):
    """As Slurm 22.05 on the twin (2 nodes of 8 CPUs): -N 16 is PartitionNodeLimit, -N 17 and
    -N 999999 (more CPUs than the partition's 16) are PartitionConfig."""
    c = lab(nodes=2, cpus=8)
    sixteen, seventeen, huge = c.submit(0, nodes=16), c.submit(0, nodes=17), c.submit(0, nodes=999_999)
    wide = c.submit(0, nodes=2, cpus=9)
    c.run(0)
    assert c.reason(sixteen) == "PartitionNodeLimit"
    assert c.reason(seventeen) == c.reason(huge) == c.reason(wide) == "PartitionConfig"


def test_more_nodes_than_the_partition_has_pends_with_partition_node_limit(lab):
    c = lab(nodes=2)
    three = c.submit(0, nodes=3)
    after = c.submit(1, nodes=2)
    c.run(0, backfill=False)
    assert c.reason(three) == "PartitionNodeLimit"
    # A job held by a partition limit does not block the partition for the jobs behind it.
    assert after.state is JobState.RUNNING


# -- job arrays ------------------------------------------------------------------------

def submit_array(c, n, throttle, **fields):
    first = c.state.next_job_id
    return [c.submit(0, array_job_id=first, array_task_id=i, array_max_running=throttle, **fields)
            for i in range(n)]


def test_array_throttle_caps_running_tasks_across_passes(lab):
    # Tasks are released one per pass, so each pass has at most one task to start.
    c = lab(nodes=2, gpus=4)
    tasks = submit_array(c, 4, 2)
    for t in tasks[2:]:
        t.hold = "user"
    c.run(0)
    assert [t.state for t in tasks[:2]] == [JobState.RUNNING] * 2

    def release(t):
        t.hold = None
        c.state.reprioritized()

    release(tasks[2])
    c.run(10)
    assert (c.reason(tasks[2]), c.reason(tasks[3])) == ("JobArrayTaskLimit", "JobHeldUser")
    c.state.finish(tasks[0], JobState.COMPLETED, 20)
    c.run(20)
    assert tasks[2].state is JobState.RUNNING
    release(tasks[3])
    c.run(30)
    assert tasks[3].state is JobState.PENDING and c.reason(tasks[3]) == "JobArrayTaskLimit"
    # The throttle is per array: an unrelated job still starts.
    other = c.submit(31)
    c.run(31)
    assert other.state is JobState.RUNNING


def test_array_throttle_holds_within_a_single_pass(lab):
    c = lab(nodes=2, gpus=4)
    tasks = submit_array(c, 4, 2)
    r = c.run(0)
    assert len(r.starts) == 2
    assert [c.reason(t) for t in tasks[2:]] == ["JobArrayTaskLimit", "JobArrayTaskLimit"]


# -- required and excluded nodes --------------------------------------------------------

def test_required_nodes_down_or_drained_are_named_in_the_reason(lab):
    c = lab(nodes=3)
    c.state.nodes.set_down(0, True)
    c.state.nodes.set_drain(1, True)
    both = c.submit(0, nodes=2, req_nodes=frozenset({"node01", "node02"}))
    c.run(0)
    assert c.reason(both) == "ReqNodeNotAvail, UnavailableNodes:node[01-02]"
    c.state.nodes.set_down(0, False)
    c.run(1)
    assert c.reason(both) == "ReqNodeNotAvail, UnavailableNodes:node02"
    c.state.nodes.set_drain(1, False)
    c.run(2)
    assert both.state is JobState.RUNNING and nodes_of(c, both) == ["node01", "node02"]


def test_too_few_usable_nodes_in_the_partition_names_the_others(lab):
    """-N3 where one of three nodes is drained waits for it, as on 22.05 (ReqNodeNotAvail naming it),
    not with Resources; a job that fits on the usable nodes runs; the count follows the nodes."""
    c = lab(nodes=3)
    c.state.nodes.set_drain(1, True)
    assert c.state.nodes.unusable == 1
    wide = c.submit(0, nodes=3)
    fits = c.submit(0, nodes=2, minutes=60)
    c.run(0)
    assert c.reason(wide) == "ReqNodeNotAvail, UnavailableNodes:node02"
    assert fits.state is JobState.RUNNING
    c.state.nodes.set_drain(1, False)
    assert c.state.nodes.unusable == 0
    c.run(1)
    assert wide.state is JobState.RUNNING  # beside the other: one CPU each


def test_required_node_busy_is_resources(lab):
    c = lab(nodes=2, gpus=4)
    hog = c.submit(0, gpus=4, minutes=60)
    c.run(0)
    assert nodes_of(c, hog) == ["node01"]
    pinned = c.submit(1, gpus=1, req_nodes=frozenset({"node01"}))
    c.run(1)
    assert c.reason(pinned) == "Resources"


def test_required_node_plus_any_other(lab):
    c = lab(nodes=3)
    job = c.submit(0, nodes=2, req_nodes=frozenset({"node03"}))
    c.run(0)
    assert job.state is JobState.RUNNING and nodes_of(c, job) == ["node01", "node03"]


def test_pinned_job_waiting_does_not_block_its_partition(lab):
    c = lab(nodes=2, gpus=4)
    c.submit(0, gpus=4, minutes=60)
    c.run(0)
    pinned = c.submit(1, gpus=1, req_nodes=frozenset({"node01"}))
    other = c.submit(2, gpus=1)
    r = c.run(3, backfill=False)
    assert c.reason(pinned) == "Resources"
    assert other.state is JobState.RUNNING and not r.starts[0].backfilled


def test_excluded_node_is_never_used(lab):
    c = lab(nodes=2, gpus=4)
    job = c.submit(0, gpus=1, exc_nodes=frozenset({"node01"}))
    c.run(0)
    assert nodes_of(c, job) == ["node02"]
    c2 = lab(nodes=2, gpus=4)
    c2.submit(0, gpus=4, minutes=60, exc_nodes=frozenset({"node01"}))
    c2.run(0)
    blocked = c2.submit(1, gpus=1, exc_nodes=frozenset({"node01"}))
    c2.run(1)
    assert blocked.state is JobState.PENDING and c2.reason(blocked) == "Resources"


# -- GPU types -------------------------------------------------------------------------

def test_gpu_type_request_uses_only_nodes_of_that_type(lab):
    c = custom(lab, two_nodes(node01="a100", node02="h100"),
               [PartitionConfig("gpu", nodes=["node01", "node02"], default=True)])
    first = c.submit(0)
    first.shape = Shape(cpus=1, gpus=2, gpu_type="h100")
    c.run(0)
    assert nodes_of(c, first) == ["node02"]
    second = c.submit(1)
    second.shape = Shape(cpus=1, gpus=3, gpu_type="h100")
    c.run(1)
    # node01 is idle, but its GPUs are a100s.
    assert second.state is JobState.PENDING and c.reason(second) == "Resources"
    untyped = c.submit(2, gpus=3)
    c.run(2)
    assert nodes_of(c, untyped) == ["node01"]


# -- queue order, Resources and Priority ---------------------------------------------------

def test_resources_then_priority_per_partition(lab):
    c = custom(lab, two_nodes(), [PartitionConfig("a", nodes=["node01"], default=True),
                                  PartitionConfig("b", nodes=["node02"])])
    c.submit(0, gpus=4, minutes=60, partition="a")
    c.run(0)
    blocked = c.submit(1, gpus=4, partition="a")
    behind = c.submit(2, gpus=1, partition="a")
    elsewhere = c.submit(3, gpus=4, partition="b")
    c.run(5, backfill=False)
    assert (c.reason(blocked), c.reason(behind)) == ("Resources", "Priority")
    assert elsewhere.state is JobState.RUNNING and nodes_of(c, elsewhere) == ["node02"]


def test_higher_priority_tier_goes_first_even_with_lower_priority(lab):
    shared = ["node01"]
    c = custom(lab, two_nodes()[:1], [PartitionConfig("low", nodes=shared, default=True, priority_tier=1),
                                      PartitionConfig("high", nodes=shared, priority_tier=2)])
    low = c.submit(0, gpus=4, partition="low")
    high = c.submit(5, gpus=4, partition="high")
    low.priority, high.priority = 1000, 1
    c.state.reprioritized()
    assert [j.job_id for j in priority_order(c.state)] == [high.job_id, low.job_id]
    c.run(10, backfill=False)
    assert high.state is JobState.RUNNING
    assert low.state is JobState.PENDING and c.reason(low) == "Resources"


def test_equal_priority_orders_by_submit_time_then_job_id(lab):
    c = lab()
    late = c.submit(5)
    early_b = c.submit(1)
    early_a = c.submit(1)
    for j in (late, early_b, early_a):
        j.priority = 7
    c.state.reprioritized()
    assert [j.job_id for j in priority_order(c.state)] == [early_b.job_id, early_a.job_id, late.job_id]
