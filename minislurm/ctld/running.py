"""The controller's side of a running job: launching it, its time limit and --signal timers,
stopping it (scancel, time limit, scontrol requeue), its end, and a node that fails under it.

A mixin of :class:`~minislurm.ctld.controller.Controller`, kept apart so that each file reads
as one subject.  Every report carries the job's incarnation (its restart count): a report
from a run that was requeued meanwhile is stale and changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import math

from minislurm.core.job import Job
from minislurm.core.states import JobState, Reason
from minislurm.ctld import accounting

log = logging.getLogger("minislurm.ctld")


class RunningJobs:
    # -- running jobs -------------------------------------------------------------------
    def node_addr(self, n: int) -> str | None:
        return self.agents[self.state.nodes.names[n]].addr

    async def _launch(self, job: Job, incarnation: int) -> None:
        from minislurm.ctld.launch import batch_payload
        payload = batch_payload(self, job)
        addr = self.node_addr(job.alloc.nodes[0])
        reply = await self.rpc.call(addr, "/jobs/launch", payload) if addr else None
        if job.restart_count != incarnation or job.state is not JobState.RUNNING:
            return
        if reply is None:
            # No answer says nothing about the job (it may well have started): node health
            # decides, as for any silent node: DOWN after SlurmdTimeout (requeue or
            # NODE_FAIL), or, if the node answers without the job, a failed launch (fence).
            log.warning("no answer to the launch of job %s from %s", job.job_id, job.alloc.nodes[0])
        elif not reply.get("ok"):
            log.error("launch of job %s on %s failed: %s", job.job_id, job.alloc.nodes[0], reply.get("error"))
            await self.job_ended(job.job_id, incarnation, exit_code=1, signal=0, launch_failed=True)

    def _arm_timers(self, job: Job, now: float) -> None:
        loop = asyncio.get_running_loop()
        handles = []
        inc = job.restart_count
        if job.time_limit != math.inf:
            at = job.start_time + job.time_limit - now
            handles.append(loop.call_later(max(0.0, at), lambda: self._spawn(self.time_limit(job.job_id, inc))))
        sig = getattr(job.spec, "signal", None)
        if sig is not None and job.time_limit != math.inf:
            at = job.start_time + job.time_limit - sig.seconds - now
            target = "batch" if sig.batch_only else "steps"
            handles.append(loop.call_later(max(0.0, at), lambda: self._spawn(
                self.signal_job(job.job_id, sig.signal, target=target))))
        self._timers[job.job_id] = handles

    def _disarm(self, job_id: int) -> None:
        for h in self._timers.pop(job_id, []):
            h.cancel()

    @staticmethod
    def _spawn(coro) -> None:
        asyncio.get_running_loop().create_task(coro)

    async def time_limit(self, job_id: int, incarnation: int) -> None:
        job = self.state.jobs.get(job_id)
        if job is None or job.state is not JobState.RUNNING or job.restart_count != incarnation:
            return
        await self.terminate(job, JobState.TIMEOUT, Reason.TIME_LIMIT, "TIME LIMIT")

    async def terminate(self, job: Job, final: JobState, reason: str, why: str) -> None:
        """Ask every agent of a running job to stop it (SIGTERM, SIGKILL after KillWait)."""
        self._ending[job.job_id] = (final, reason)
        payload = {"job_id": job.job_id, "inc": job.restart_count, "why": why,
                   "kill_wait": self.config.kill_wait}
        nodes = list(job.alloc.nodes)
        replies = await asyncio.gather(*(self.rpc.call(self.node_addr(n), "/jobs/terminate", payload)
                                         for n in nodes if self.node_addr(n)))
        if not self.live[job.job_id].batch or all(r is None for r in replies):
            # No batch script will report back: end the job here.
            await self.job_ended(job.job_id, job.restart_count, exit_code=0, signal=15)

    async def signal_job(self, job_id: int, signum: int, *, target: str = "steps") -> None:
        """Signal a running job: ``steps`` (the default, as --signal and scancel -s do), ``batch``
        (the batch shell alone, --signal=B:), ``batch_tree`` (scancel -b) or ``all`` (scancel -f)."""
        job = self.state.jobs.get(job_id)
        if job is None or job.state is not JobState.RUNNING:
            return
        payload = {"job_id": job_id, "inc": job.restart_count, "signal": signum, "target": target}
        await asyncio.gather(*(self.rpc.call(self.node_addr(n), "/jobs/signal", payload)
                               for n in job.alloc.nodes if self.node_addr(n)))

    async def job_ended(self, job_id: int, incarnation: int, *, exit_code: int, signal: int,
                        launch_failed: bool = False) -> bool:
        """The batch script (or the allocation's owner) finished.  False if the report is stale."""
        job = self.state.jobs.get(job_id)
        if job is None or job.state is not JobState.RUNNING or job.restart_count != incarnation:
            return False
        now = self.clock()
        final, reason = self._ending.pop(job_id, (None, Reason.NONE))
        others = [n for n in job.alloc.nodes[1:] if self.node_addr(n)]
        self._disarm(job_id)
        if final is JobState.REQUEUED:  # scontrol requeue of a running job: its run has stopped
            self._requeued(job, now, exit_code, signal, hold=reason)
        else:
            self._ended(job, final, reason, now, exit_code, signal, launch_failed)
        await self.store.commit()
        self._wake(job_id)
        self.request_pass()
        if others:  # the script ended: no process of the job may outlive it on other nodes
            payload = {"job_id": job_id, "inc": incarnation, "why": None, "kill_wait": 0}
            for n in others:
                self._spawn(self.rpc.call(self.node_addr(n), "/jobs/terminate", payload))
        return True

    def _requeued(self, job: Job, now: float, exit_code: int, signal: int, hold: str | None) -> None:
        """The run is recorded REQUEUED and the job goes back to PENDING, same id (reference 5.3)."""
        from minislurm.ctld.actions import requeue_now
        job.exit_signal = signal
        self.charge_usage(job)
        accounting.record_job(self, job, state=JobState.REQUEUED, end=now, exit_code=exit_code)
        accounting.close_steps(self, job, JobState.CANCELLED)
        requeue_now(self, job, hold)

    def _ended(self, job: Job, final: JobState | None, reason: str, now: float, exit_code: int, signal: int,
               launch_failed: bool) -> None:
        if final is None:
            if launch_failed:
                final, reason = JobState.FAILED, "JobLaunchFailure"
            elif exit_code == 0 and signal == 0:
                final = JobState.COMPLETED
            else:
                final, reason = JobState.FAILED, Reason.NON_ZERO_EXIT
        self.charge_usage(job)  # before finish() releases the allocation it is computed from
        self.state.finish(job, final, now, exit_code=exit_code, reason=reason)
        job.exit_signal = signal
        accounting.record_job(self, job)
        accounting.close_steps(self, job, final)
        self.save_job(job)

    def charge_usage(self, job: Job) -> None:
        book = self.fairshare
        if book is not None and job.alloc is not None and job.start_time is not None:
            book.charge(job, self.clock())

    async def node_failed(self, n: int, why: str) -> None:
        """A node went DOWN: requeue its requeueable batch jobs, end the others NODE_FAIL."""
        for job in self.state.jobs_on_node(n):
            self.lost_on_node(job, n)
        await self.store.commit()
        self.request_pass()

    def lost_on_node(self, job: Job, n: int) -> None:
        """This run of ``job`` died with node ``n``: record NODE_FAIL, then requeue it (a batch
        job that may be requeued) or end it, and stop what is left of it on its other nodes."""
        now = self.clock()
        live = self.live[job.job_id]
        inc = job.restart_count
        self._disarm(job.job_id)
        self._ending.pop(job.job_id, None)
        survivors = [m for m in job.alloc.nodes if m != n and self.node_addr(m)]
        self.charge_usage(job)
        accounting.record_job(self, job, state=JobState.NODE_FAIL, end=now, exit_code=1)
        accounting.close_steps(self, job, JobState.NODE_FAIL)
        if live.batch and job.requeue:
            log.info("requeue job JobId=%s due to failure of node %s", job.job_id, self.state.nodes.names[n])
            self.state.requeue(job, now)
            self.steps.pop(job.job_id, None)
            live.next_step = 0
            accounting.record_job(self, job)
        else:
            log.info("Killing JobId=%s on failed node %s", job.job_id, self.state.nodes.names[n])
            self.state.finish(job, JobState.NODE_FAIL, now, exit_code=1, reason=Reason.NODE_DOWN)
        self.save_job(job)
        self._wake(job.job_id)
        payload = {"job_id": job.job_id, "inc": inc, "why": "NODE FAILURE", "kill_wait": 0}
        for m in survivors:
            self._spawn(self.rpc.call(self.node_addr(m), "/jobs/terminate", payload))

    # -- waiting for a job (srun, sbatch --wait) ---------------------------------------------
    def _wake(self, job_id: int) -> None:
        ev = self._waiters.pop(job_id, None)
        if ev is not None:
            ev.set()

    async def wait_change(self, job_id: int, timeout: float) -> None:
        ev = self._waiters.setdefault(job_id, asyncio.Event())
        try:
            await asyncio.wait_for(ev.wait(), timeout)
        except asyncio.TimeoutError:
            pass
