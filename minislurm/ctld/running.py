"""The controller's side of a running job: launching it, its time limit and --signal timers,
stopping it (scancel, time limit, scontrol requeue), its end, and a node that fails under it.

The controller's ``running`` part (``ctl.running.job_ended(...)``), kept apart so that each
file reads as one subject.  Every report carries the job's incarnation (its restart count): a report
from a run that was requeued meanwhile is stale and changes nothing.

Stopping a job is an intent saved with the job (``Live.ending``) before any agent is told,
so a controller that dies after acknowledging ``scancel`` or ``scontrol requeue`` finishes
the job that way once it is back, whatever the script does in between.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING

from minislurm.core.job import Job
from minislurm.core.states import JobState, Reason
from minislurm.ctld import accounting
from minislurm.ctld.agents import Agent, call_nodes
from minislurm.sched.apply import requeue_or_fail

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller

log = logging.getLogger("minislurm.ctld")

# What slurmstepd writes to the job's stderr when it is stopped for each reason ("DUE TO ...").
WHY = {JobState.CANCELLED: "CANCELLED", JobState.TIMEOUT: "TIME LIMIT", JobState.REQUEUED: "JOB REQUEUE"}
LAUNCH_FAILED_NODE = "batch job complete failure"  # the reason slurmctld drains the node with
# A script whose files could not be opened ends FAILED (JobLaunchFailure) with ExitCode 0:53
# and its batch step CANCELLED 0:53, as Slurm 22.05 records it (checked on the real-Slurm twin).
LAUNCH_FAILED_SIGNAL = 53


class RunningJobs:
    """What the controller does to and for running jobs; it holds no state of its own (the
    job, its saved intent ``Live.ending`` and its :class:`~minislurm.ctld.runstate.Run` are the
    controller's), so it can be read, and replaced, as one subject."""

    def __init__(self, ctl: "Controller"):
        self.ctl = ctl

    async def launch(self, job: Job, incarnation: int) -> None:
        """Send the batch script of this run to its first node's agent."""
        from minislurm.ctld.launch import batch_payload
        payload = batch_payload(self.ctl, job)
        addr = self.ctl.node_addr(job.alloc.nodes[0])
        reply = await self.ctl.rpc.call(addr, "/jobs/launch", payload) if addr else None
        if job.restart_count != incarnation or job.state is not JobState.RUNNING:
            return
        if reply is None:
            # No answer says nothing about the job (it may well have started): node health
            # decides, as for any silent node: DOWN after SlurmdTimeout (requeue or
            # NODE_FAIL), or, if the node answers without the job, a relaunch (see health.fence).
            log.warning("no answer to the launch of job %s from %s", job.job_id, job.alloc.nodes[0])
        elif reply.get("ok"):
            self.ctl.live[job.job_id].launched = True
            self.ctl.save_job(job)
            self.ctl.store.flush_soon()
        else:
            await self.launch_refused(job, incarnation, reply)

    async def launch_refused(self, job: Job, incarnation: int, reply: dict) -> None:
        """The agent would not start the script.  The job's own fault (its output file cannot be
        opened) fails the job; anything else is the node's: as slurmctld does, the node is
        drained and the job requeued held (JobHeldAdmin; Slurm's squeue adds the description
        "launch failed requeued held", which minislurm does not keep), so one broken node
        cannot fail or loop a queue of jobs."""
        node = self.ctl.state.nodes.names[job.alloc.nodes[0]]
        error = reply.get("error") or "launch failed"
        if reply.get("stale"):  # it ran and ended there: its end is reported by the agent
            log.info("launch of job %s on %s: %s", job.job_id, node, error)
            return
        log.error("launch of job %s on %s failed: %s", job.job_id, node, error)
        if reply.get("fault") == "job":
            await self.job_ended(job.job_id, incarnation, exit_code=0, signal=LAUNCH_FAILED_SIGNAL,
                                 launch_failed=True)
            return
        n = job.alloc.nodes[0]
        self.ctl.state.nodes.set_drain(n, True, LAUNCH_FAILED_NODE)
        self.ctl.save_node(node, reason_by=self.ctl.slurm_user)
        self.ctl.live[job.job_id].ending = [JobState.REQUEUED.name, "admin"]
        await self.job_ended(job.job_id, incarnation, exit_code=1, signal=0)

    def arm_timers(self, job: Job, now: float) -> None:
        """Set the running job's time limit and ``--signal`` timers, replacing any it had."""
        self._disarm(job.job_id)
        loop = asyncio.get_running_loop()
        handles = []
        inc = job.restart_count
        if job.time_limit != math.inf:
            at = job.start_time + job.time_limit - now
            handles.append(loop.call_later(max(0.0, at), lambda: self.ctl.spawn(self.time_limit(job.job_id, inc))))
        sig = getattr(job.spec, "signal", None)
        if sig is not None and job.time_limit != math.inf:
            at = job.start_time + job.time_limit - sig.seconds - now
            target = "batch" if sig.batch_only else "steps"
            handles.append(loop.call_later(max(0.0, at), lambda: self.ctl.spawn(
                self.signal_job(job.job_id, sig.signal, target=target))))
        self.ctl.run_of(job).timers = handles

    def _disarm(self, job_id: int) -> None:
        run = self.ctl.runs.get(job_id)
        if run is not None:
            run.disarm()

    async def time_limit(self, job_id: int, incarnation: int) -> None:
        job = self.ctl.state.jobs.get(job_id)
        if job is None or job.state is not JobState.RUNNING or job.restart_count != incarnation:
            return
        await self.terminate(job, JobState.TIMEOUT, Reason.TIME_LIMIT)

    async def terminate(self, job: Job, final: JobState, reason: str | None) -> None:
        """End a running job as ``final`` (CANCELLED, TIMEOUT, or REQUEUED with ``reason`` the
        hold kind): save the intent, then ask its agents to stop it (SIGTERM, SIGKILL after
        KillWait); the job ends when its batch script has."""
        await self.decide_stop(job, final, reason)
        await self.deliver_ending(job)

    async def decide_stop(self, job: Job, final: JobState, reason: str | None) -> None:
        """Save the intent to end ``job`` as ``final``; return once it is on disk, having told
        nobody.  The caller then tells the agents (:meth:`deliver_ending`): at once, or, for a
        request (scancel, scontrol requeue), once the request is answered, as slurmctld
        answers first, then signals: a job that requeues itself hears the answer."""
        self.ctl.live[job.job_id].ending = [final.name, reason]
        self.ctl.run_of(job).stop_held = True  # health.fence leaves it to us
        self.ctl.save_job(job)
        try:
            await self.ctl.store.commit()
        except BaseException:  # cancelled while saving: the caller will tell nobody, so the store does
            self.ctl.store.then(lambda: self.ctl.spawn(self.deliver_ending(job)))
            raise

    async def deliver_ending(self, job: Job) -> None:
        """Tell every agent of the job to stop it, as the saved intent says (saved: the caller
        made sure of it, with :meth:`decide_stop` or ``store.then``)."""
        live = self.ctl.live[job.job_id]
        if job.state is not JobState.RUNNING or not live.ending:
            return
        self.ctl.run_of(job).stop_held = False
        inc = job.restart_count
        payload = {"job_id": job.job_id, "inc": inc, "why": WHY.get(JobState[live.ending[0]]),
                   "kill_wait": self.ctl.config.kill_wait}
        replies = list((await call_nodes(self.ctl.rpc, self._agents(job.alloc.nodes), "/jobs/terminate",
                                         payload)).values())
        if any(r is not None for r in replies) and job.state is JobState.RUNNING and job.restart_count == inc:
            self.ctl.run_of(job).stop_delivered = True  # (unless the run ended meanwhile: nothing to keep)
        if not live.batch or all(r is None for r in replies):
            # No batch script will report back: end the job here.
            await self.job_ended(job.job_id, inc, exit_code=0, signal=15)

    async def signal_job(self, job_id: int, signum: int, *, target: str = "steps") -> None:
        """Signal a running job: ``steps`` (the default, as --signal and scancel -s do), ``batch``
        (the batch shell alone, --signal=B:), ``batch_scancel`` (the same for scancel -b, which
        slurmstepd notes in the job's output) or ``all`` (scancel -f)."""
        job = self.ctl.state.jobs.get(job_id)
        if job is None or job.state is not JobState.RUNNING:
            return
        payload = {"job_id": job_id, "inc": job.restart_count, "signal": signum, "target": target}
        await call_nodes(self.ctl.rpc, self._agents(job.alloc.nodes), "/jobs/signal", payload)

    async def job_ended(self, job_id: int, incarnation: int, *, exit_code: int, signal: int,
                        launch_failed: bool = False) -> bool:
        """The batch script (or the allocation's owner) finished.  False if the report is stale.
        Returns once the end is saved (an agent stops repeating its report then)."""
        job = self.ctl.state.jobs.get(job_id)
        if job is None or job.state is not JobState.RUNNING or job.restart_count != incarnation:
            return False
        now = self.ctl.clock()
        live = self.ctl.live[job_id]
        final, reason = (JobState[live.ending[0]], live.ending[1]) if live.ending else (None, Reason.NONE)
        # The leader's script is the whole heterogeneous job's: its end ends every component.
        parts = [job] + [c for c in self.ctl.state.het_components(job)[1:]
                         if job.het_job_offset == 0 and c.state is JobState.RUNNING]
        # No process of the job may outlive its end: the script's node stops its own; every
        # other node is told (no step credential of it may start anything).
        stops = [(list(c.alloc.nodes[1:] if c is job and live.batch else c.alloc.nodes), c.job_id, c.restart_count)
                 for c in parts]
        for c in parts:
            self._disarm(c.job_id)
            self.ctl.live[c.job_id].ending = None
        if final is JobState.REQUEUED:  # scontrol requeue of a running job: its run has stopped
            self._requeued(parts, now, exit_code, signal, hold=reason)
        else:
            self._ended(job, final, reason, now, exit_code, signal, launch_failed)
            for c in parts[1:]:  # Slurm 22.05: cancelled with the leader, or ended as its script was
                # (COMPLETED, or FAILED with its exit code; 0:15 when the leader ran out of time)
                self._ended(c, final if final is JobState.CANCELLED else None, reason, now, exit_code, signal,
                            launch_failed)
        for nodes, ended_id, inc in stops:
            self.stop_on(nodes, ended_id, inc, why=None)
        await self.ctl.commit(wake=tuple(c.job_id for c in parts))
        return True

    def stop_on(self, nodes: list[int], job_id: int, incarnation: int, why: str | None) -> None:
        """After the next commit, tell these nodes' agents to kill what is left of a run."""
        payload = {"job_id": job_id, "inc": incarnation, "why": why, "kill_wait": 0}
        ctl, agents = self.ctl, self._agents(nodes)
        if agents:
            ctl.store.then(lambda: ctl.spawn(call_nodes(ctl.rpc, agents, "/jobs/terminate", payload)))

    def _agents(self, nodes: list[int]) -> dict[str, Agent]:
        """The agents of these nodes that have registered (the others cannot be told anything)."""
        names = self.ctl.state.nodes.names
        return {names[n]: self.ctl.agents[names[n]] for n in nodes if self.ctl.node_addr(n)}

    def _requeued(self, parts: list[Job], now: float, exit_code: int, signal: int, hold: str | None) -> None:
        """Each run is recorded REQUEUED and the job goes back to PENDING, same id (reference
        5.3); a heterogeneous job (``parts``: its leader, then its running components) whole."""
        from minislurm.ctld.actions import requeue_now
        for c in parts:
            c.exit_signal = signal
            self.charge_usage(c, now)
            accounting.record_job(self.ctl, c, state=JobState.REQUEUED, end=now, exit_code=exit_code)
            accounting.close_steps(self.ctl, c, JobState.REQUEUED)
        requeue_now(self.ctl, parts[0], hold)

    def _ended(self, job: Job, final: JobState | None, reason: str, now: float, exit_code: int, signal: int,
               launch_failed: bool) -> None:
        if final is None:
            if launch_failed:
                final, reason = JobState.FAILED, "JobLaunchFailure"
            elif exit_code == 0 and signal == 0:
                final = JobState.COMPLETED
            else:
                final, reason = JobState.FAILED, Reason.NON_ZERO_EXIT
        self.charge_usage(job, now)  # before finish() releases the allocation it is computed from
        self.ctl.state.finish(job, final, now, exit_code=exit_code, reason=reason)
        self.ctl.stats.ended(final, launch_failed)
        job.exit_signal = signal
        accounting.record_job(self.ctl, job)
        accounting.close_steps(self.ctl, job, final)
        self.forget_run(job)
        self.ctl.save_job(job)

    def forget_run(self, job: Job) -> None:
        """What the controller kept about a run that is over: its steps, srun's heartbeat, the
        stop it delivered."""
        run = self.ctl.runs.pop(job.job_id, None)
        if run is not None:
            run.disarm()
        self.ctl.store.drop_steps(job.job_id)

    def charge_usage(self, job: Job, end: float) -> None:
        """Charge the run's usage as its accounting record says it ended (a restarted
        controller charges it again from that record: FairShareBook.replay)."""
        book = self.ctl.fairshare
        if book is not None and job.alloc is not None and job.start_time is not None:
            book.charge(job, end)

    async def node_failed(self, n: int, why: str) -> None:
        """A node went DOWN: requeue its requeueable batch jobs, end the others NODE_FAIL."""
        for job in self.ctl.state.jobs_on_node(n):
            self.lost_on_node(job, n)
        await self.ctl.commit()

    def lost_on_node(self, job: Job, n: int) -> None:
        """This run of ``job`` died with node ``n``: record NODE_FAIL, then requeue it (a batch
        job that may be requeued) or end it, and stop what is left of it on its other nodes.
        A heterogeneous job's running components share that fate (on the twin, Slurm 22.05
        requeued both components of one when the second one's node was lost)."""
        now = self.ctl.clock()
        state = self.ctl.state
        parts = [c for c in state.het_components(job) if c.state is JobState.RUNNING]
        stops = []
        for c in parts:
            stops.append(([m for m in c.alloc.nodes if m != n], c.job_id, c.restart_count))
            self._disarm(c.job_id)
            self.ctl.live[c.job_id].ending = None
            self.charge_usage(c, now)
            accounting.record_job(self.ctl, c, state=JobState.NODE_FAIL, end=now, exit_code=1)
            accounting.close_steps(self.ctl, c, JobState.NODE_FAIL)
            self.forget_run(c)
        leader = state.het_components(job)[0]
        if requeue_or_fail(state, job, now, batch=self.ctl.live[leader.job_id].batch) is JobState.PENDING:
            log.info("requeue job JobId=%s due to failure of node %s", leader.job_id, state.nodes.names[n])
            parts = state.het_components(job)  # every component is pending again
            for c in parts:
                self.ctl.live[c.job_id].next_step = 0
                accounting.record_job(self.ctl, c)
        else:
            log.info("Killing JobId=%s on failed node %s", leader.job_id, state.nodes.names[n])
            for c in parts:
                self.ctl.stats.ended(JobState.NODE_FAIL)
        for c in parts:
            self.ctl.save_job(c)
            self.ctl.tell(c.job_id)
        for nodes, lost_id, inc in stops:
            self.stop_on(nodes, lost_id, inc, why="NODE FAILURE")

    # -- srun allocations ----------------------------------------------------------------------
    def heard_from(self, job: Job) -> None:
        """The srun that owns an allocation is still there (any call it makes about the job)."""
        run = self.ctl.runs.get(job.job_id)
        if run is not None and run.srun_heard is not None:
            run.srun_heard = self.ctl.clock()

    async def check_inactive(self) -> None:
        """InactiveLimit: an allocation whose srun has not been heard of for that long (it was
        killed, or lost its way to the controller) is ended TIMEOUT, reason InactiveLimit, as
        slurmctld does; otherwise it would hold its nodes until its time limit."""
        limit = self.ctl.config.inactive_limit
        if not limit:
            return
        now = self.ctl.clock()
        for job_id, run in list(self.ctl.runs.items()):
            job = self.ctl.state.jobs.get(job_id)
            if run.srun_heard is None or job is None or job.state is not JobState.RUNNING:
                continue
            if now - run.srun_heard > limit and not self.ctl.live[job_id].ending:
                log.info("inactivity time limit reached for JobId=%s", job_id)
                await self.terminate(job, JobState.TIMEOUT, Reason.INACTIVE_LIMIT)
