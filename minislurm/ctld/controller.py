"""The controller (like slurmctld): owns the cluster state and runs every job's life.

It runs on one asyncio loop, so state changes need no locks.  The policy is
:func:`minislurm.sched.schedule.schedule`, called unchanged: a main pass soon after every
event (submission, completion, node change) and a full backfill pass every ``bf_interval``.
Everything a client is told has first been committed to the :class:`~minislurm.ctld.store.Store`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from pathlib import Path

from minislurm.core import errors
from minislurm.core.cluster import ClusterConfig
from minislurm.core.errors import SlurmError
from minislurm.core.job import Job
from minislurm.core.layout import block
from minislurm.core.spec import spec_from_dict
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState, Reason
from minislurm.ctld import accounting
from minislurm.ctld.agents import AgentClient
from minislurm.ctld.auth import Signer
from minislurm.ctld.jobs import Live, job_from_dict, job_to_dict
from minislurm.ctld.store import Store
from minislurm.sched import priority
from minislurm.sched.schedule import schedule
from minislurm.sched.submit import build_jobs

log = logging.getLogger("minislurm.ctld")


class Agent:
    """What the controller knows about one node's agent."""

    def __init__(self, addr: str | None = None):
        self.addr = addr
        self.last_response = 0.0
        self.boot_time = 0.0
        self.registered = False


class Controller:
    def __init__(self, config: ClusterConfig, state_dir: str | Path, signer: Signer, *,
                 operators: set[str] = frozenset(), clock=time.time):
        self.config = config
        self.state = ClusterState(config)
        self.store = Store(state_dir)
        self.signer = signer
        self.operators = set(operators) | {"root"}
        self.clock = clock
        self.live: dict[int, Live] = {}
        self.agents: dict[str, Agent] = {n.name: Agent() for n in config.nodes}
        self.rpc = AgentClient(signer._sign({"ctld": True}, 10 * 365 * 86400), timeout=5.0)
        self.expected: dict[int, float] = {}
        self.sched_nodes: dict[int, tuple[int, ...]] = {}
        self.steps: dict[int, dict[int, dict]] = {}
        self._timers: dict[int, list[asyncio.TimerHandle]] = {}
        self._ending: dict[int, tuple[JobState, str]] = {}  # job -> (state, reason) we asked agents to end
        self._pass_due = False
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self.started_at = clock()

    # -- start-up and recovery -------------------------------------------------------
    async def start(self) -> None:
        self._recover()
        for n in range(len(self.state.nodes)):  # nobody gets work before its agent answers
            self.state.nodes.set_responding(n, False)
        loop = asyncio.get_running_loop()
        from minislurm.ctld.health import health_loop
        self._tasks = [loop.create_task(self._backfill_loop()), loop.create_task(health_loop(self))]
        if self.config.priority.type == "priority/multifactor":
            self._tasks.append(loop.create_task(self._priority_loop()))
        self.request_pass()

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for handles in self._timers.values():
            for h in handles:
                h.cancel()
        await self.store.commit()
        await self.rpc.close()
        self.store.close()

    def _recover(self) -> None:
        """Reload jobs, nodes and reservations saved by an earlier controller."""
        st = self.state
        st.next_job_id = int(self.store.meta("next_job_id", "1"))
        for name, data in self.store.nodes().items():
            if name not in st.nodes.index:
                continue
            n = st.nodes.index[name]
            self.agents[name].addr = data.get("addr")
            if data.get("down"):
                st.nodes.set_down(n, True, data.get("reason"))
            if data.get("drain"):
                st.nodes.set_drain(n, True, data.get("reason"))
        from minislurm.ctld.reservations import load_reservations
        load_reservations(self)
        now = self.clock()
        for data in self.store.jobs():
            job, live = job_from_dict(data, st.nodes.index)
            self.live[job.job_id] = live
            st.jobs[job.job_id] = job
            if job.array_job_id is not None:
                st.array_tasks[job.array_job_id].append(job.job_id)
            if job.state is JobState.PENDING:
                st.pending[job.job_id] = job
            elif job.state is JobState.RUNNING and job.alloc is not None:
                st.nodes.allocate(job.job_id, job.alloc)
                st.running[job.job_id] = job
                if job.array_job_id is not None:
                    st.array_running[job.array_job_id] += 1
                self._arm_timers(job, now)
                for a in self.agents.values():  # running jobs are re-adopted when agents answer
                    a.last_response = max(a.last_response, now)
        st.reprioritized()
        log.info("recovered %d jobs (%d pending, %d running); next job id %d",
                 len(st.jobs), len(st.pending), len(st.running), st.next_job_id)

    # -- persistence ------------------------------------------------------------------
    def save_job(self, job: Job) -> None:
        self.store.put_job(job.job_id, job_to_dict(job, self.live[job.job_id], self.state.nodes.names))

    def save_node(self, name: str) -> None:
        n = self.state.nodes.index[name]
        nodes = self.state.nodes
        self.store.put_node(name, {"addr": self.agents[name].addr, "down": bool(nodes.down[n]),
                                   "drain": bool(nodes.drain[n]), "reason": nodes.reason[n]})

    # -- submission -------------------------------------------------------------------
    async def submit(self, user: str, request: dict) -> list[int]:
        """Validate, commit, queue.  Returns the job ids (one per array task)."""
        now = self.clock()
        spec = spec_from_dict(request.get("spec", {}))
        batch = bool(request.get("batch", True))
        jobs = build_jobs(spec, self.state, user=user, now=now,
                          default_name=request.get("default_name") or ("sbatch" if batch else "srun"))
        for job in jobs:
            job.priority = priority.initial(job, self.state, now)
            self.live[job.job_id] = Live(
                batch=batch, script=request.get("script"), environment=dict(request.get("environment", {})),
                work_dir=request.get("work_dir") or "/", stdout=request.get("stdout", ""),
                stderr=request.get("stderr", ""), stdin=request.get("stdin") or "/dev/null",
                open_mode=spec.open_mode or "truncate", command=request.get("command", ""),
                argv=[str(a) for a in request.get("argv", [])],
                uid=int(request.get("uid", 0)), gid=int(request.get("gid", 0)),
                submit_host=request.get("submit_host", ""))
            self.save_job(job)
        self.store.put_meta("next_job_id", self.state.next_job_id)
        await self.store.commit()
        for job in jobs:
            self.state.add(job)
            accounting.record_job(self, job)
        self.request_pass()
        return [j.job_id for j in jobs]

    # -- scheduling ---------------------------------------------------------------------
    def request_pass(self) -> None:
        """Something changed: run a main pass as soon as the loop is free."""
        self._changed.set()
        if not self._pass_due:
            self._pass_due = True
            asyncio.get_running_loop().call_soon(self._main_pass)

    def _main_pass(self) -> None:
        self._pass_due = False
        self.run_pass(backfill=False)

    def run_pass(self, backfill: bool) -> None:
        if not self.state.pending:
            return
        now = self.clock()
        result = schedule(self.state, now, backfill_cycle=backfill)
        self.state.settle_dependencies(result.settled)
        for job_id in result.settled:
            self.save_job(self.state.jobs[job_id])
        for job_id, reason in result.reasons.known.items():
            self.state.jobs[job_id].reason = reason
        if backfill:
            self.expected, self.sched_nodes = result.expected_start, result.planned_nodes
        for start in result.starts:
            job = self.state.jobs[start.job_id]
            self.state.start(job, start.alloc, now)
            self.expected.pop(job.job_id, None)
            self.save_job(job)
            accounting.record_job(self, job)
            self._arm_timers(job, now)
            self._wake(job.job_id)
            if self.live[job.job_id].batch:
                self._spawn(self._launch(job, job.restart_count))
        if self.store.dirty:
            self._spawn(self.store.commit())

    async def _backfill_loop(self) -> None:
        interval = max(0.2, self.config.sched.bf_interval)
        while True:
            await asyncio.sleep(interval)
            if self._changed.is_set() and self.config.sched.policy != "fifo":
                self._changed.clear()
                self.run_pass(backfill=True)
            elif self.state.pending and self.config.sched.policy != "fifo":
                self.run_pass(backfill=True)  # begin times and reasons move with the clock

    async def _priority_loop(self) -> None:
        from minislurm.ctld.fairshare import FairShareBook
        self.fairshare = FairShareBook(self.config)
        while True:
            priority.update(self.state, self.clock(), self.fairshare.factors(self.clock()))
            self.request_pass()
            await asyncio.sleep(max(1.0, self.config.priority.calc_period))

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
        if reply is None or not reply.get("ok"):
            why = (reply or {}).get("error", "agent unreachable")
            log.error("launch of job %s on %s failed: %s", job.job_id, job.alloc.nodes[0], why)
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
        if final is None:
            if launch_failed:
                final, reason = JobState.FAILED, "JobLaunchFailure"
            elif exit_code == 0 and signal == 0:
                final = JobState.COMPLETED
            else:
                final, reason = JobState.FAILED, Reason.NON_ZERO_EXIT
        self._disarm(job_id)
        others = [n for n in job.alloc.nodes[1:] if self.node_addr(n)]
        self.state.finish(job, final, now, exit_code=exit_code, reason=reason)
        job.exit_signal = signal
        self.charge_usage(job)
        accounting.record_job(self, job)
        accounting.close_steps(self, job, final)
        self.save_job(job)
        await self.store.commit()
        self._wake(job_id)
        self.request_pass()
        if others:  # the script ended: no process of the job may outlive it on other nodes
            payload = {"job_id": job_id, "inc": incarnation, "why": None, "kill_wait": 0}
            for n in others:
                self._spawn(self.rpc.call(self.node_addr(n), "/jobs/terminate", payload))
        return True

    def charge_usage(self, job: Job) -> None:
        book = getattr(self, "fairshare", None)
        if book is not None and job.alloc is not None and job.start_time is not None:
            book.charge(job, self.clock())

    async def node_failed(self, n: int, why: str) -> None:
        """A node went DOWN: requeue its requeueable batch jobs, end the others NODE_FAIL."""
        now = self.clock()
        for job in self.state.jobs_on_node(n):
            live = self.live[job.job_id]
            inc = job.restart_count
            self._disarm(job.job_id)
            self._ending.pop(job.job_id, None)
            survivors = [m for m in job.alloc.nodes if m != n and self.node_addr(m)]
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
        await self.store.commit()
        self.request_pass()

    # -- waiting for a job (srun, sbatch --wait) ---------------------------------------------
    def _wake(self, job_id: int) -> None:
        ev = self._waiters.pop(job_id, None) if hasattr(self, "_waiters") else None
        if ev is not None:
            ev.set()

    async def wait_change(self, job_id: int, timeout: float) -> None:
        if not hasattr(self, "_waiters"):
            self._waiters: dict[int, asyncio.Event] = {}
        ev = self._waiters.setdefault(job_id, asyncio.Event())
        try:
            await asyncio.wait_for(ev.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    # -- helpers for the API -------------------------------------------------------------
    def job(self, job_id: int) -> Job:
        job = self.state.jobs.get(job_id)
        if job is None:
            raise SlurmError(errors.INVALID_JOB_ID)
        return job

    def may_modify(self, user: str, job: Job) -> None:
        if user != job.user and user not in self.operators:
            raise SlurmError(errors.ACCESS_DENIED)

    def tasks_per_node(self, job: Job) -> list[int]:
        ntasks = job.ntasks or job.num_nodes
        return block(ntasks, job.num_nodes)
