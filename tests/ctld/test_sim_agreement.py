"""The simulator and the controller decide alike: the same jobs, submitted at the same times to
the same cluster, start and end at the same moments in a replay (minislurm.sim) and on the
live controller (in-process on a fake clock, ctldkit.py).  Both run one ClusterState, one
scheduler and one admission rule; this checks that nothing around them drifts apart, on the
lab's own configuration: priority/multifactor with fair share charged as runs end and
priorities recomputed every PriorityCalcPeriod, a partition shared or OverSubscribe=EXCLUSIVE,
an advance reservation that some jobs run in and the others must keep clear of,
dependencies (afterok, afterany) on earlier jobs, and job arrays (with a throttle or none)."""

from __future__ import annotations

import asyncio
import copy

from ctldkit import EPOCH, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minislurm.cluster.confgen import lab_config
from minislurm.core.deps import Dependency
from minislurm.core.reservation import AdvanceReservation
from minislurm.core.spec import ArraySpec
from minislurm.ctld import reservations
from minislurm.sim.engine import Simulator
from minislurm.sim.traces import TraceJob

USERS = [("alice", "physics"), ("bob", "physics"), ("carol", "bio")]  # who submits, charged to what
trace_st = st.lists(st.tuples(st.integers(0, 300), st.integers(10, 600), st.integers(1, 20), st.integers(1, 3),
                              st.integers(1, 8), st.integers(0, 4), st.integers(0, len(USERS) - 1), st.booleans(),
                              st.one_of(st.none(), st.tuples(st.sampled_from(["afterok", "afterany"]),
                                                             st.integers(1, 3))),
                              st.one_of(st.none(), st.tuples(st.integers(2, 4), st.sampled_from([None, 1, 2])))),
                    min_size=1, max_size=12)
# The last two fields: a dependency on the row so many rows before (if it was submitted first; if
# not, or if it was refused, the id is unknown then, and Slurm drops it); and an array of so many
# tasks, with a throttle (%N) or none.
# An advance reservation for account bio on the last node, from t=120 s for six hours (room for
# every job that asks for it): the one-node jobs of bio's user that ask for it (the last field
# of a row) run only inside it, the others around it.
RESERVATION = ("bio_run", ("gpu03",), 120.0, 120.0 + 6 * 3600, "bio")


def _depends(row, i: int) -> bool:
    """Whether row ``i`` has a dependency: not a job of the reservation (one held by a dependency
    past the reservation's end could never start, on Slurm either)."""
    return row[8] is not None and i >= row[8][1] and _reservation(row) is None


def _after(row, i: int, ids: dict) -> dict | None:
    """What sbatch -d KIND:ID sends, for the row's dependency, if its target has an id yet."""
    target = ids.get(i + 1 - row[8][1]) if _depends(row, i) else None
    return {"terms": [[row[8][0], [target]]]} if target else None


def _array(row) -> ArraySpec | None:
    return None if row[9] is None else ArraySpec(indices=tuple(range(row[9][0])), max_running=row[9][1])


def _array_request(row) -> dict | None:
    """What sbatch --array=0-N[%T] sends."""
    array = _array(row)
    return None if array is None else {"indices": list(array.indices), "max_running": array.max_running}


def _reservation(row) -> str | None:
    return RESERVATION[0] if row[7] and row[3] == 1 and USERS[row[6]][1] == RESERVATION[4] else None


def cluster(policy: str, exclusive: bool):
    """The lab's cluster as ``minislurm cluster`` configures it (priority/multifactor, fair share
    decaying over a day), with two timings moved off each other's grid: backfill every 30 s,
    and priorities every 60.0123 s rather than 60 -- a recalculation and a backfill cycle due at
    the same instant may be taken in either order by two event loops, and that is no
    difference of rule."""
    cfg = lab_config(3, 4, 8, 64_000, policy=policy)
    assert cfg.priority.type == "priority/multifactor" and cfg.priority.weight_fairshare
    cfg.sched.bf_interval = 30
    cfg.priority.calc_period = 60.0123
    cfg.partitions[0].exclusive = exclusive  # OverSubscribe=EXCLUSIVE
    return cfg


def _times(submit: int, runtime: int, limit: int, row: int) -> tuple[float, float]:
    """Submit and run times off the backfill ticks (multiples of bf_interval), one millisecond
    apart for jobs of the same second, and a run that ends before its time limit: a tie (a
    submission on a tick, an end at the limit, two submissions at one instant, which a replay
    sees together and the controller one after the other) may be taken either way by two event
    loops, and that is no difference of rule."""
    return submit + 0.37 + row / 1000, min(runtime, limit * 60 - 1) + 0.1


def _nodes(state, job) -> tuple[str, ...]:
    """The job's node list (its last run's), by name."""
    return tuple(state.nodes.names[n] for n in job.alloc.nodes)


def replay(rows, cfg) -> dict[int, tuple]:
    """Trace id -> each of its jobs' (start, end, state, nodes) in a replay (an array's tasks
    in index order), or ("refused",)."""
    jobs = [TraceJob(i + 1, *_times(submit, runtime, limit, i), limit * 60.0, nodes, cpus, gpus,
                     user=USERS[who][0], account=USERS[who][1], reservation=_reservation(row),
                     dependency=Dependency(((row[8][0], (i + 1 - row[8][1],)),)) if _depends(row, i) else None,
                     array=_array(row))
            for i, row in enumerate(rows) for submit, runtime, limit, nodes, cpus, gpus, who, *_ in [row]]
    name, nodes, start, end, account = RESERVATION
    sim = Simulator(cfg, jobs, reservations=[AdvanceReservation(name, nodes, start, end,
                                                                accounts=frozenset({account}))])
    sim.run()
    refused = {job_id for job_id, _ in sim.rejected}
    return {job.job_id: ("refused",) if job.job_id in refused else tuple(
                (round(r.start, 3), round(r.end, 3), r.state, _nodes(sim.state, sim.state.jobs[r.job_id]))
                for r in sim.records_of(job.job_id))
            for job in jobs}


def live(rows, cfg, tmp_path) -> dict[int, tuple]:
    async def test(h):
        loop = asyncio.get_running_loop()
        name, nodes, start, end, account = RESERVATION
        await reservations.create(h.ctl, {"name": name, "nodes": ",".join(nodes), "start": EPOCH + start,
                                          "end": EPOCH + end, "accounts": account}, "root")
        ids = {}
        for i, (submit, runtime, limit, nodes, cpus, gpus, who, *_) in sorted(enumerate(rows),
                                                                               key=lambda r: (r[1][0], r[0])):
            # The same job as sbatch asks for it: NODES nodes, one task each of CPUS CPUs, GPUS GPUs per node.
            at, seconds = _times(submit, runtime, limit, i)
            await asyncio.sleep(EPOCH + at - loop.time())
            try:
                ids[i + 1] = await h.submit(USERS[who][0], account=USERS[who][1], seconds=seconds, nodes_min=nodes, ntasks_per_node=1,
                                            cpus_per_task=cpus, gpus_per_node=[None, gpus] if gpus else None,
                                            time_limit_min=limit, reservation=_reservation(rows[i]),
                                            dependency=_after(rows[i], i, ids), array=_array_request(rows[i]))
            except Exception:  # noqa: BLE001 - refused: compared below
                ids[i + 1] = None
        def jobs_of(job_id: int) -> list:  # the job, or its array's tasks in index order
            tasks = sorted((h.job(t) for t in h.ctl.state.array_tasks.get(job_id, ())), key=lambda t: t.array_task_id)
            return tasks or [h.job(job_id)]

        await h.until(lambda: all(t.state.finished for j in ids.values() if j for t in jobs_of(j)),
                      within=86_000, step=1)
        return {k: ("refused",) if j is None else tuple(
                    (round(t.start_time - EPOCH, 3), round(t.end_time - EPOCH, 3), t.state.name,
                     _nodes(h.ctl.state, t)) for t in jobs_of(j))
                for k, j in ids.items()}

    return run(test, tmp_path, config=cfg)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(trace_st, st.sampled_from(["conservative", "easy", "fifo"]), st.booleans())
def test_a_replay_and_the_controller_start_and_end_every_job_alike(tmp_path_factory, rows, policy, exclusive):
    """Every job's start, end, final state and node list, on the lab's config."""
    cfg = cluster(policy, exclusive)
    simulated = replay(rows, copy.deepcopy(cfg))
    controlled = live(rows, copy.deepcopy(cfg), tmp_path_factory.mktemp("ctld"))
    assert controlled.keys() == simulated.keys()
    for trace_id, seen in controlled.items():
        replayed = simulated[trace_id]
        assert len(seen) == len(replayed) and all(map(alike, seen, replayed)), (
            trace_id, seen, replayed, controlled, simulated)


def alike(live_run: tuple | str, replayed: tuple | str) -> bool:
    """The same state and nodes; the same start and end but for the controller's pass at a
    reservation's bound, which runs a moment past it (reservations.BOUND_SLACK)."""
    if live_run == "refused" or replayed == "refused":
        return live_run == replayed
    (start, end, *rest), (start2, end2, *rest2) = live_run, replayed
    slack = reservations.BOUND_SLACK + 0.001
    return rest == rest2 and abs(start - start2) <= slack and abs(end - end2) <= slack
