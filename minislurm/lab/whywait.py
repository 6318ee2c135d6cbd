"""Why a job waits, for the labs: asked of a live cluster, or at a moment of a lesson scenario.

On a live cluster the controller answers (``minislurm why``: its last backfill plan, and
what-ifs worked out by the policy on a copy of its state).  In a scenario
(:mod:`minislurm.lab.scenario`) the simulator is stopped after the last pass at or before the
moment asked about, and the same pure functions (:mod:`minislurm.sched.why`) explain that
pass's state and plan: the two answers are made by one piece of code.  Times in a scenario are
seconds from its start, and its jobs keep the names the lesson gave them.
"""

from __future__ import annotations

import copy

from minislurm.cli.why import describe
from minislurm.lab.scenario import LabJob, scenario_simulator
from minislurm.sched import why


class _Stop(Exception):
    """The simulation has passed the moment asked about."""


def why_live(sh, job_id: int) -> dict:
    """What the controller of the terminal ``sh``'s cluster says of job ``job_id``."""
    return sh.api.call("GET", f"/jobs/{job_id}/why")


def why_at(jobs: list[LabJob], name: str, at: float, **scenario) -> dict:
    """Why the scenario's job ``name`` waits at ``at`` seconds, with the what-ifs, as ``minislurm
    why`` would say it then (job ids in submission order from 1, as a fresh cluster gives).
    ``scenario``: :func:`~minislurm.lab.scenario.run_scenario`'s settings.  A ValueError when the
    job is not submitted by then."""
    jobs = list(jobs)
    index = next((i for i, j in enumerate(jobs) if j.name == name), None)
    if index is None:
        raise ValueError(f"no job named {name!r} in the scenario")
    sim, _ = scenario_simulator(jobs, **scenario)
    seen: dict = {}

    def keep(res, _applied) -> None:
        if res.now > at:
            raise _Stop
        seen.update(state=copy.deepcopy(sim.state), expected=dict(res.expected_start),
                    planned=dict(res.planned_nodes))

    sim.observers.append(keep)
    try:
        sim.run()
    except _Stop:
        pass
    state = seen.get("state")
    job_id = next((j.job_id for j in state.jobs.values() if j.name == str(index)), None) if state else None
    if job_id is None:
        raise ValueError(f"{name} is not submitted yet at {minutes(at)} (it is at {minutes(jobs[index].submit)})")
    out = why.explain(state, job_id, at, seen["expected"], seen["planned"])
    out["now"] = at
    out["what_if"] = why.what_ifs(state, job_id, at, out["expected_start"]) if out["state"] == "PENDING" else []
    return _named(out, jobs)


def _named(w: dict, jobs: list[LabJob]) -> dict:
    """The simulator names a job by its index in the scenario: give back the lesson's names."""
    def name(index: str) -> str:
        return jobs[int(index)].name

    return {**w, "name": name(w["name"]), "held_by": [{**h, "name": name(h["name"])} for h in w["held_by"]],
            "ahead": [{**a, "name": name(a["name"])} for a in w["ahead"]]}


def minutes(seconds: float) -> str:
    """A scenario time as the lessons write it: minute 75 is ``1:15``."""
    m = int(round(seconds / 60))
    return f"{m // 60}:{m % 60:02d}"


def words(w: dict, scenario: bool = False) -> str:
    """The explanation in plain words, as ``minislurm why`` prints it (times as hours:minutes
    from the scenario's start when ``scenario``)."""
    return describe(w, minutes) if scenario else describe(w)
