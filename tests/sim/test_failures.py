"""Node failures in the simulator: Slurm's requeue (reference section 5.2/5.3) and lost work."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import islice
from pathlib import Path

import pytest

from minislurm.core.cluster import simple_cluster
from minislurm.core.reservation import AdvanceReservation
from minislurm.sim.engine import Simulator
from minislurm.sim.failures import FailureModel, checkpointed, wall_time
from minislurm.sim.metrics import summarize
from minislurm.sim.traces import TraceJob, read_trace

PHILLY = Path(__file__).resolve().parents[2] / "data" / "traces" / "rfold_philly_trace.csv"
TIMEOUT, DELAY = 300.0, 120.0  # SlurmdTimeout and requeue_delay (Slurm's defaults)


@dataclass(frozen=True)
class Scripted(FailureModel):
    """Node n's up-times are ``at[n]`` (the first from t=0, each later one from its return)."""

    at: tuple[tuple[float, ...], ...] = ()

    def uptimes(self, node):
        return iter(self.at[node] if node < len(self.at) else ())


def cluster(nodes: int = 2, requeue: bool = True):
    cfg = simple_cluster(nodes, cpus=32, mem=1, gpus=8)
    cfg.sched.policy, cfg.priority.type = "conservative", "priority/basic"
    cfg.job_requeue = requeue
    return cfg


def by_name(sim: Simulator) -> dict[int, object]:
    return {int(sim.state.jobs[r.job_id].name): r for r in sim.records.values()}


def test_checkpointed() -> None:
    assert checkpointed(1000.0, None) == 0.0 and checkpointed(1000.0, 0) == 0.0
    assert checkpointed(1000.0, 300.0) == 900.0 and checkpointed(299.0, 300.0) == 0.0
    # with 10 s writes a checkpoint is kept only once written: 3 x 310 s by 1000 s
    assert checkpointed(1000.0, 300.0, 10.0) == 900.0 and checkpointed(929.0, 300.0, 10.0) == 600.0
    assert wall_time(1000.0, 300.0, 10.0) == 1030.0 and wall_time(1000.0, None, 10.0) == 1000.0


def test_requeue_hand_built() -> None:
    """Node 0 dies at 1000, is noticed at 1300 and repaired at 1000 + 3600.

    Job 7 (4 GPUs, 5000 s, checkpoints every 300 s) has 900 s saved: it loses (1300 - 900) x 4
    GPU-s, keeps its id, is eligible again at 1300 + 120 + 1 and runs the remaining 4100 s on
    node 1.  Job 8 (2 GPUs) would have finished at 1100, after its node died: it cannot; it too
    keeps 900 s, loses (1300 - 900) x 2 GPU-s and runs its last 200 s on node 1.
    """
    jobs = [TraceJob(7, 0.0, 5000.0, 10000.0, 1, 16, 4), TraceJob(8, 0.0, 1100.0, 3600.0, 1, 8, 2)]
    model = Scripted(mtbf_s=1.0, repair_s=3600.0, at=((1000.0,),))
    sim = Simulator(cluster(), jobs, failures=model, checkpoint_interval=300.0)
    sim.run()
    r7, r8 = by_name(sim)[7], by_name(sim)[8]
    assert r7.job_id == 1 and r8.job_id == 2 and len(sim.records) == 2
    back = 1300.0 + DELAY + 1
    assert [(s.start, s.end, s.nodes, s.state, s.lost_gpu_s) for s in r7.segments] == [
        (0.0, 1300.0, (0,), "NODE_FAIL", (1300.0 - 900.0) * 4),
        (back, back + 4100.0, (1,), "COMPLETED", 0.0)]
    assert [(s.start, s.end, s.nodes, s.state, s.lost_gpu_s) for s in r8.segments] == [
        (0.0, 1300.0, (0,), "NODE_FAIL", (1300.0 - 900.0) * 2),
        (back, back + 200.0, (1,), "COMPLETED", 0.0)]
    for rec in (r7, r8):
        assert (rec.start, rec.state, rec.restarts) == (0.0, "COMPLETED", 1)
        assert sim.state.jobs[rec.job_id].restart_count == 1
    s = summarize(list(sim.records.values()), sim.capacity, policy="conservative", wall_s=1.0)
    assert s["node_failures"] == 2 and s["requeues"] == 2
    assert s["gpu_hours_lost_to_failures"] == pytest.approx((1600.0 + 800.0) / 3600.0)


def test_checkpoint_writes_take_time_and_only_written_ones_count() -> None:
    """5000 s of work, a 100 s checkpoint after every 1000 s of it: node 0 dies at 2500, during
    the third interval's work: two checkpoints (2 x 1100 s) are written, 2000 s of work saved.
    Noticed at 2800: (2800 - 2200) x 8 GPU-s lost.  The rest, 3000 s of work and 3 writes, runs
    on node 1 from 2800 + 120 + 1.  Without failures the run takes 5000 + 5 x 100 s."""
    job = TraceJob(7, 0.0, 5000.0, 10000.0, 1, 32, 8)
    sim = Simulator(cluster(), [job], failures=Scripted(mtbf_s=1.0, at=((2500.0,),)),
                    checkpoint_interval=1000.0, checkpoint_cost=100.0)
    sim.run()
    back = 2800.0 + DELAY + 1
    assert [(s.start, s.end, s.nodes, s.state, s.lost_gpu_s) for s in sim.records[1].segments] == [
        (0.0, 2800.0, (0,), "NODE_FAIL", 600.0 * 8), (back, back + 3300.0, (1,), "COMPLETED", 0.0)]
    clean = Simulator(cluster(), [job], checkpoint_interval=1000.0, checkpoint_cost=100.0)
    clean.run()
    assert clean.records[1].end == 5500.0


def test_requeued_job_waits_out_the_delay_even_with_room() -> None:
    """Node 1 is free the whole time, yet the job restarts only at detection + delay + 1."""
    model = Scripted(mtbf_s=1.0, at=((50.0,),))
    sim = Simulator(cluster(), [TraceJob(1, 0.0, 1000.0, 3600.0, 1, 1, 1)], failures=model)
    sim.run()
    segs = sim.records[1].segments
    assert [(s.start, s.end, s.state) for s in segs] == [
        (0.0, 350.0, "NODE_FAIL"), (350.0 + DELAY + 1, 350.0 + DELAY + 1 + 1000.0, "COMPLETED")]
    assert segs[0].lost_gpu_s == 350.0  # no checkpoints: all of it


def test_no_requeue_ends_in_node_fail() -> None:
    """JobRequeue=0: the job is killed on the failed node and ends NODE_FAIL (exit code 1)."""
    model = Scripted(mtbf_s=1.0, at=((500.0,),))
    jobs = [TraceJob(1, 0.0, 2000.0, 3600.0, 1, 8, 8), TraceJob(2, 0.0, 2000.0, 3600.0, 1, 8, 8)]
    sim = Simulator(cluster(requeue=False), jobs, failures=model, checkpoint_interval=200.0)
    sim.run()
    r1, r2 = sim.records[1], sim.records[2]
    assert (r1.start, r1.end, r1.state, r1.restarts) == (0.0, 800.0, "NODE_FAIL", 0)
    assert [(s.state, s.lost_gpu_s) for s in r1.segments] == [("NODE_FAIL", (800.0 - 400.0) * 8)]
    job = sim.state.jobs[1]
    assert (job.state.name, job.exit_code, job.restart_count) == ("NODE_FAIL", 1, 0)
    assert (r2.end, r2.state) == (2000.0, "COMPLETED")  # node 1 never failed


@lru_cache(maxsize=1)
def philly() -> tuple[TraceJob, ...]:
    """The first 200 Philly jobs: minutes to six weeks long, 1 to 16 GPUs."""
    return tuple(read_trace(PHILLY, "philly", cores_per_node=32, gpus_per_node=8, limit=200).jobs)


EXPONENTIAL = FailureModel(500 * 3600.0, 3600.0)
# Infant mortality (k < 1) and one node in ten a lemon failing ten times as often.
BURSTS_AND_LEMONS = FailureModel(500 * 3600.0, 3600.0, shape=0.6, lemon_fraction=0.1, lemon_factor=10.0)


def replay(seed: int, ckpt: float | None, model: FailureModel = EXPONENTIAL, cost: float = 0.0) -> Simulator:
    """8 nodes x 8 GPUs, each failing every 500 h on average, repaired in an hour."""
    sim = Simulator(cluster(8), philly(), failures=replace(model, seed=seed), checkpoint_interval=ckpt,
                    checkpoint_cost=cost)
    sim.run()
    return sim


@pytest.mark.parametrize("model, cost", [(EXPONENTIAL, 0.0), (BURSTS_AND_LEMONS, 0.0), (BURSTS_AND_LEMONS, 60.0)],
                         ids=["exponential", "weibull+lemons", "weibull+lemons+write-cost"])
def test_random_failures_follow_slurm_requeue(model: FailureModel, cost: float) -> None:
    interval = 1800.0
    sim = replay(seed=3, ckpt=interval, model=model, cost=cost)
    recs = list(sim.records.values())
    assert len(recs) == 200 and len({r.job_id for r in recs}) == 200
    requeued = [r for r in recs if r.restarts]
    assert len(requeued) >= 5
    for r in recs:
        segs = r.segments
        assert len(segs) == r.restarts + 1 == sim.state.jobs[r.job_id].restart_count + 1
        assert all(s.state == "NODE_FAIL" for s in segs[:-1]) and segs[-1].state == "COMPLETED"
        assert r.state == "COMPLETED" and (r.start, r.end) == (segs[0].start, segs[-1].end)
        for a, b in zip(segs, segs[1:]):
            assert b.start >= a.end + DELAY + 1  # not restarted before the requeue delay
        work = 0.0  # saved by the runs so far
        for s in segs:
            assert {s.job_id} == {r.job_id} and s.gpus == r.gpus
            # lost = (detection - last checkpoint written) x GPUs: what was kept is whole
            # intervals of work, each with its write
            kept = (s.end - s.start) - s.lost_gpu_s / s.gpus
            if s.state == "NODE_FAIL":
                written = round(kept / (interval + cost))
                assert kept >= 0 and kept == pytest.approx(written * (interval + cost)) and s.lost_gpu_s > 0
                work += written * interval
            else:
                assert s.lost_gpu_s == 0.0
                # the last run does the rest of the work, with a write after each interval of it
                rest = r.runtime - work
                assert s.end - s.start == pytest.approx(rest + (rest // interval) * cost)


def test_same_seed_same_result_other_seed_differs() -> None:
    def fingerprint(sim):
        return [(r.job_id, r.restarts, [(s.start, s.end, s.nodes, s.state, s.lost_gpu_s) for s in r.segments])
                for r in sim.records.values()]

    a, b, c = replay(5, 600.0), replay(5, 600.0), replay(6, 600.0)
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a) != fingerprint(c)


def test_checkpoints_reduce_lost_gpu_hours() -> None:
    lost = []
    for ckpt in (None, 14400.0, 3600.0, 600.0, 60.0):
        sim = replay(seed=1, ckpt=ckpt)
        s = summarize(list(sim.records.values()), sim.capacity, policy="conservative", wall_s=1.0)
        assert s["node_failures"] > 0
        lost.append(s["gpu_hours_lost_to_failures"])
    assert all(x > y for x, y in zip(lost, lost[1:])), lost
    assert lost[-1] < lost[0] / 5


def test_failures_stop_at_until_so_a_replay_with_a_job_that_cannot_run_ends():
    """Failures in a window: none from ``until`` on.  A job that waits for a reservation that
    has ended can never start; with failures for ever the replay would never end, with failures
    until the window's end it stops with the simulator's "can never start"."""
    model = FailureModel(mtbf_s=3600.0, repair_s=600.0, seed=3)
    windowed = replace(model, until=20 * 3600.0)
    times = windowed.failure_times(0, float("inf"))
    assert times and max(times) < 20 * 3600 and times == model.failure_times(0, 20 * 3600)
    assert list(windowed.uptimes(0)) == list(islice(model.uptimes(0), len(times)))  # the same draws, cut
    resv = AdvanceReservation("r", ("node01",), 0.0, 3600.0, users=frozenset({"u"}))
    late = TraceJob(1, 7200.0, 60.0, 60.0, 1, 1, 0, user="u", reservation="r")
    with pytest.raises(ValueError, match="can never start"):
        Simulator(simple_cluster(1, gpus=0), [late], reservations=[resv], failures=windowed).run()
