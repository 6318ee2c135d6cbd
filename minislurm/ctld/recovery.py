"""Start-up after a stop or a crash (slurmctld's state recovery): the nodes' saved states, the
reservations, every job and the steps of running ones are reloaded from the store, and the
running jobs' time limits armed again.  Their agents confirm them when they next answer
(health.fence), so a job that died meanwhile is noticed then."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minislurm.core.states import JobState
from minislurm.ctld.jobs import job_from_dict, srun_owned
from minislurm.ctld.reservations import load_reservations

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller

log = logging.getLogger("minislurm.ctld")


def recover(ctl: "Controller") -> None:
    """Reload jobs, nodes and reservations saved by an earlier controller."""
    st = ctl.state
    st.next_job_id = int(ctl.store.meta("next_job_id", str(st.config.first_job_id)))
    for name, part in st.partitions.items():  # scontrol update PartitionName=... MaxTime=
        saved = ctl.store.meta(f"partition_max_time:{name}")
        if saved is not None:
            part.max_time = float(saved)
    for name, data in ctl.store.nodes().items():
        if name not in st.nodes.index:
            continue
        n = st.nodes.index[name]
        ctl.agents[name].addr = data.get("addr")
        ctl.agents[name].heartbeat = data.get("heartbeat")
        if data.get("reason_user"):
            ctl.agents[name].reason_set = (data["reason_user"], data.get("reason_time") or 0.0)
        if data.get("down"):
            st.nodes.set_down(n, True, data.get("reason"))
        if data.get("drain"):
            st.nodes.set_drain(n, True, data.get("reason"))
    load_reservations(ctl)
    now = ctl.clock()
    for data in ctl.store.jobs():
        job, live = job_from_dict(data, st.nodes.index)
        ctl.live[job.job_id] = live
        st.restore(job)
        if job.job_id in st.running:
            ctl.running.arm_timers(job, now)
            if srun_owned(job, live):
                ctl.run_of(job).srun_heard = now
            for a in ctl.agents.values():  # running jobs are re-adopted when agents answer
                a.last_response = max(a.last_response, now)
    for job_id, restart, step in ctl.store.steps():
        job = st.jobs.get(job_id)
        if job is not None and job.state is JobState.RUNNING and job.restart_count == restart:
            ctl.run_of(job).steps[step["step_id"]] = step
    log.info("recovered %d jobs (%d pending, %d running); next job id %d",
             len(st.jobs), len(st.pending), len(st.running), st.next_job_id)
