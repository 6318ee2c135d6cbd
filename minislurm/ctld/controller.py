"""The controller (like slurmctld): owns the cluster state and runs every job's life.

It runs on one asyncio loop, so state changes need no locks.  The policy is
:func:`minislurm.sched.schedule.schedule`, called unchanged: a main pass soon after every
event (submission, completion, node change) and a full backfill pass every ``bf_interval``.
Commit, then tell: every change a client, a waiter or an agent hears of has first been
committed to the :class:`~minislurm.ctld.store.Store` (acknowledgements await the commit;
wake-ups, launches and kills are queued with ``store.then``).  What happens to a job once it
runs (launch, limits, stopping it, its end, node failure) is its
:class:`~minislurm.ctld.running.RunningJobs` part, ``ctl.running``, in its own file.

Background work (the backfill and priority loops, node health, launches) runs as tasks the
controller owns: an exception in one is logged and the loop goes on.
"""

from __future__ import annotations

import asyncio
import grp
import logging
import os
import pwd
import time
from pathlib import Path

from minislurm.common.auth import Signer
from minislurm.core import errors
from minislurm.core.accounts import AccountsError, AssociationTree, parse_accounts
from minislurm.core.cluster import ClusterConfig
from minislurm.core.errors import SlurmError
from minislurm.core.job import Job
from minislurm.core.layout import block, node_tasks
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.ctld import accounting, reservations
from minislurm.ctld.agents import Agent, AgentClient
from minislurm.ctld.jobs import Live, job_to_dict, srun_owned
from minislurm.ctld.recovery import recover
from minislurm.ctld.running import RunningJobs
from minislurm.ctld.runstate import Run
from minislurm.ctld.stats import Stats
from minislurm.ctld.store import Store
from minislurm.lifecycle import Background, every
from minislurm.sched import priority
from minislurm.sched.access import Requester
from minislurm.sched.allocation import try_at_once
from minislurm.sched.apply import Applied, apply
from minislurm.sched.order import QueueOrder
from minislurm.sched.releases import Releases
from minislurm.sched.schedule import PassResult, schedule

log = logging.getLogger("minislurm.ctld")
RESERVATION_CHECK = 2.0  # seconds between looks for reserved nodes lost (reservations.replace_lost)


class Controller:
    def __init__(self, config: ClusterConfig, state_dir: str | Path, signer: Signer, *,
                 operators: set[str] = frozenset(), clock=time.time, accounts_file: Path | None = None,
                 rpc: AgentClient | None = None, check_users: bool = False,
                 super_users: set[str] = frozenset()):
        """``clock`` and ``rpc`` (how it calls node agents) are parameters so that tests can run
        the controller in-process on a fake clock with fake agents (tests/ctld/ctldkit.py).
        ``check_users``: a job's user must be known to this host's user database (see
        :meth:`check_user`).  ``super_users``: SlurmUser (root and the daemon's own user always
        are), who may also submit for others and use any partition."""
        self.config = config
        self.check_users = check_users
        self.accounts_file = accounts_file  # accounts.conf: associations and shares (FairShareBook)
        self.state = ClusterState(config)
        self.queue_order = QueueOrder()  # the sorted queue, kept between passes
        self.releases = Releases()  # the running jobs' side of the backfill plan, likewise
        self.store = Store(state_dir)
        self.signer = signer
        self._operators = set(operators) | {"root"}
        self.clock = clock
        self.live: dict[int, Live] = {}
        self.agents: dict[str, Agent] = {n.name: Agent() for n in config.nodes}
        self.rpc = rpc or AgentClient(signer.ctld_token(), timeout=5.0)
        self.expected: dict[int, float] = {}
        self.sched_nodes: dict[int, tuple[int, ...]] = {}
        self.runs: dict[int, Run] = {}  # running jobs: their current run (see run_of)
        self._waiters: dict[int, asyncio.Event] = {}  # jobs someone long-polls (srun, sbatch --wait)
        self.fairshare = None  # a FairShareBook, with priority/multifactor
        self._pass_due = False
        self._changed = asyncio.Event()
        self._backfill_soon = asyncio.Event()  # an srun or salloc waits for the next cycle
        self.background = Background(log)
        self.started_at = clock()
        self.slurm_user = pwd.getpwuid(os.geteuid()).pw_name  # SlurmUser: sets reasons itself
        self.super_users = set(super_users) | {"root", self.slurm_user}
        self._associations = AssociationTree(root_user=True)
        self._accounts_stamp: tuple | None = None
        self.running = RunningJobs(self)  # launches, limits, stops and ends of running jobs
        self.stats = Stats(clock())  # what sdiag reports

    # -- start-up and recovery -------------------------------------------------------
    async def start(self) -> None:
        recover(self)
        if self.config.priority.type == "priority/multifactor":
            from minislurm.ctld.fairshare import load_book
            self.fairshare = load_book(self.config, self.accounts_file)
            self.fairshare.replay(self.store.acct("step = ''"))  # usage is state: from the records
            self.fairshare.associate(self.state.jobs.values())  # later ones at submission
        for n in range(len(self.state.nodes)):  # nobody gets work before its agent answers
            self.state.nodes.set_responding(n, False)
        from minislurm.ctld.health import health_loop
        self.spawn(self._backfill_loop())
        self.spawn(health_loop(self))
        self.spawn(every(1.0, self.running.check_inactive, log))
        self.spawn(every(RESERVATION_CHECK, lambda: reservations.replace_lost(self), log))
        if self.config.priority.type == "priority/multifactor":
            self.spawn(self._priority_loop())
        for job in list(self.state.running.values()):
            live = self.live[job.job_id]
            if live.ending and not live.batch:  # a stop acknowledged before a restart (batch
                self.spawn(self.running.deliver_ending(job))  # jobs: when their agent answers, health.fence)
        self.request_pass()

    async def stop(self) -> None:
        self.background.cancel_all()
        for run in self.runs.values():
            run.disarm()
        await self.store.commit()
        await self.rpc.close()
        self.store.close()

    def run_of(self, job: Job) -> Run:
        """The job's current run, made on first use; a run of an earlier incarnation is dropped."""
        run = self.runs.get(job.job_id)
        if run is None or run.incarnation != job.restart_count:
            if run is not None:
                run.disarm()
            run = self.runs[job.job_id] = Run(job.restart_count)
        return run

    # -- persistence ------------------------------------------------------------------
    def save_job(self, job: Job) -> None:
        self.store.put_job(job.job_id, job_to_dict(job, self.live[job.job_id], self.state.nodes.names))

    def save_step(self, job: Job, step: dict) -> None:
        self.store.put_step(job.job_id, job.restart_count, step["step_id"], step)
        accounting.record_step(self, job, step)

    async def commit(self, *, wake: tuple[int, ...] = ()) -> None:
        """The one way a change takes effect: what was queued is made durable, and only then are
        whoever waits on the jobs in ``wake`` woken (srun, sbatch --wait) and a pass asked for."""
        for job_id in wake:
            self.tell(job_id)
        await self.store.commit()
        self.request_pass()

    def tell(self, job_id: int) -> None:
        """Wake whoever waits on the job (srun, sbatch --wait) once what changed is committed."""
        self.store.then(lambda: self._wake(job_id))

    def save_node(self, name: str, reason_by: str | None = None) -> None:
        """Persist a node's state; ``reason_by`` names who just set its reason (sinfo -R's USER)."""
        n = self.state.nodes.index[name]
        nodes = self.state.nodes
        agent = self.agents[name]
        if not nodes.reason[n]:
            agent.reason_set = None
        elif reason_by is not None:
            agent.reason_set = (reason_by, self.clock())
        user, at = agent.reason_set or (None, None)
        self.store.put_node(name, {"addr": agent.addr, "heartbeat": agent.heartbeat, "down": bool(nodes.down[n]), "drain": bool(nodes.drain[n]),
                                   "reason": nodes.reason[n], "reason_user": user, "reason_time": at})

    @property
    def agent_calls(self) -> int:
        """Calls to node agents not yet answered (sdiag's agent count; a test's stand-in for the
        RPC client may not count them)."""
        return getattr(self.rpc, "in_flight", 0)

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
        began = time.perf_counter()
        result = schedule(self.state, now, backfill_cycle=backfill, queue_order=self.queue_order,
                          releases=self.releases)
        applied = apply(self.state, result)
        self.stats.cycle(backfill, int((time.perf_counter() - began) * 1e6),  # sdiag's figures of the pass
                         result.tested if backfill else result.reached, result.queued, now,
                         backfilled=sum(s.backfilled for s in applied.started), table=len(result.planned_nodes) + 1)
        self.take(applied, backfill, result)

    def allocate_at_once(self, job: Job) -> None:
        """srun or salloc asked for this allocation: try it now, before any pass
        (:mod:`minislurm.sched.allocation`).  If it has to wait, somebody waits at a terminal:
        the next backfill cycle comes at once rather than at the next ``bf_interval`` tick
        (Slurm keeps the tick; its decisions are the same, only sooner here)."""
        result = try_at_once(self.state, job, self.clock())
        if result.starts:
            self.take(apply(self.state, result), False, result)
        else:
            self._backfill_soon.set()

    def take(self, applied: Applied, backfill: bool, result: PassResult) -> None:
        """What a pass (or an allocation tried at once) started, cancelled or settled: saved,
        accounted, and each start told and launched once it is on disk."""
        now = result.now
        self.stats.started += len(applied.started)
        for job in applied.cancelled:  # --kill-on-invalid-dep=yes
            self.stats.ended(JobState.CANCELLED)
            accounting.record_job(self, job)
            self.tell(job.job_id)
        if backfill:
            self.expected, self.sched_nodes = dict(result.expected_start), dict(result.planned_nodes)
        for start in applied.started:
            job = start.job
            self.expected.pop(start.key, None)
            if job.job_id != start.key:
                self.moved(start.key, job)
            live = self.live[job.job_id]
            live.launched = False
            if srun_owned(job, live):
                self.run_of(job).srun_heard = now
            self.save_job(job)
            accounting.record_job(self, job)
            self.running.arm_timers(job, now)
            self.store.then(lambda job=job, inc=job.restart_count: self._started(job, inc))
        for job in applied.settled:  # after the starts: a task that started took its own id
            self.save_job(job)
        self.store.flush_soon()

    def moved(self, key: int, job: Job) -> None:
        """An array task took its own id (ClusterState.split_off: as it started, or held by
        itself): what was kept under its key moves to the id, and the id counter is saved with it."""
        self.live[job.job_id] = self.live.pop(key)
        if key in self._waiters:
            self._waiters[job.job_id] = self._waiters.pop(key)
        self._drop_key(key)
        self.store.put_meta("next_job_id", self.state.next_job_id)

    def forget_task(self, job: Job) -> None:
        """A pending task cancelled by itself leaves its array's record without a trace
        (ClusterState.forget_task): nothing is kept under its key, on disk either."""
        key = job.job_id
        self.state.forget_task(job)
        self.live.pop(key, None)
        self._drop_key(key)

    def _drop_key(self, key: int) -> None:
        """Nothing is kept under a pending array task's old key: the plan's, and on disk."""
        self.sched_nodes.pop(key, None)
        self.expected.pop(key, None)
        self.store.drop_job(key)

    def _started(self, job: Job, incarnation: int) -> None:
        """The start is on disk: tell srun or sbatch --wait, and give a batch script to its agent."""
        self._wake(job.job_id)
        if self.live[job.job_id].batch and job.state is JobState.RUNNING and job.restart_count == incarnation:
            self.spawn(self.running.launch(job, incarnation))

    async def _backfill_loop(self) -> None:
        if self.config.sched.policy == "fifo":
            return

        def cycle() -> None:
            # Each cycle after a change; otherwise while jobs wait, as begin times and
            # reasons move with the clock.
            if self._changed.is_set() or self.state.pending:
                self._changed.clear()
                self.run_pass(backfill=True)
        await every(max(0.2, self.config.sched.bf_interval), cycle, log, first_after=True,
                    early=self._backfill_soon, soonest=0.2)

    async def _priority_loop(self) -> None:
        def recalc() -> None:
            now = self.clock()
            self.state.set_priorities(priority.recompute(self.state, now, self.fairshare.factors(now)))
            self.request_pass()
        await every(max(1.0, self.config.priority.calc_period), recalc, log)

    # -- background work ----------------------------------------------------------------
    def spawn(self, coro) -> asyncio.Task:
        """Run ``coro`` as a task the controller owns: kept until done, its failure logged."""
        return self.background.spawn(coro)


    # -- waiting for a job (srun, sbatch --wait) ---------------------------------------------
    def _wake(self, job_id: int) -> None:
        ev = self._waiters.pop(job_id, None)
        if ev is not None:
            ev.set()

    async def wait_change(self, job_id: int, timeout: float) -> None:
        """Return when the job changes (after the change is committed), or after ``timeout``."""
        ev = self._waiters.setdefault(job_id, asyncio.Event())
        try:
            await asyncio.wait_for(ev.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    # -- helpers for the API -------------------------------------------------------------
    async def settled(self) -> None:
        """Wait until what memory holds now is saved, so an answer shows only durable state;
        refuse (see :meth:`check_saving`) while the state cannot be saved."""
        if not self.store.busy:
            return
        saving = asyncio.ensure_future(self.store.settled())
        while not saving.done():
            self.check_saving()
            await asyncio.wait([saving], timeout=0.5)

    def check_saving(self) -> None:
        """Refuse a change while the state cannot be saved: better no answer than a lost one."""
        if self.store.failure is not None:
            raise SlurmError(errors.STATE_SAVE_FAILED, self.store.failure)

    def node_addr(self, n: int) -> str | None:
        """Where node ``n``'s agent answers (None until it has registered)."""
        return self.agents[self.state.nodes.names[n]].addr

    def job(self, job_id: int) -> Job:
        """The job ``job_id`` names; an array's id before its last task took it names the
        array's record, here its first task still in it (or its first task)."""
        job = self.state.jobs.get(job_id)
        if job is None and self.state.array_tasks.get(job_id):
            tasks = sorted((self.state.jobs[t] for t in self.state.array_tasks[job_id]),
                           key=lambda t: (t.job_id >= 0, t.array_task_id))
            job = tasks[0]
        if job is None:
            raise SlurmError(errors.INVALID_JOB_ID)
        return job

    @staticmethod
    def ids_of(user: str, uid: int, gid: int) -> tuple[int, int]:
        """A user's uid and gid from the passwd database, as Slurm's authentication gives them;
        the client's own word only for a user this host does not know."""
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            return uid, gid
        return pw.pw_uid, pw.pw_gid

    def check_user(self, user: str) -> None:
        """Refuse a job of a user this host does not know (Slurm's "Invalid user id"), on a
        cluster whose agents run jobs as their users: its node could not, and would be drained
        for everyone.  The controller sees the users the nodes see (the local machine's passwd;
        in the docker cluster, the extrausers files all containers share)."""
        if not self.check_users:
            return
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise SlurmError(errors.USER_ID_MISSING) from None

    def associations(self) -> AssociationTree:
        """accounts.conf's associations as last read, read again once the file has changed (as
        slurmdbd sends slurmctld each change), so ``cluster add-users`` needs no restart.  A
        broken edit keeps the last good tree (and is logged)."""
        path = self.accounts_file
        try:
            st = path.stat() if path is not None else None
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino) if st else None
        except OSError:
            stamp = None
        if stamp != self._accounts_stamp:
            try:
                self._associations = (parse_accounts(path.read_text(), str(path), root_user=True) if stamp
                                      else AssociationTree(root_user=True))
                self._accounts_stamp = stamp
            except (OSError, AccountsError) as exc:
                log.error("accounts.conf not read again, the last one kept: %s", exc)
        return self._associations

    def adopt_associations(self, tree: AssociationTree) -> None:
        """A tree just written to accounts.conf (by sacctmgr's request) is the one enforced from
        now on; its new accounts, users and shares reach the fair-share tree too."""
        st = self.accounts_file.stat()
        self._associations, self._accounts_stamp = tree, (st.st_mtime_ns, st.st_size, st.st_ino)
        if self.fairshare is not None:
            self.fairshare.adopt(tree)

    @property
    def operators(self) -> set[str]:
        """root, SlurmUser, the daemon's user, and AdminLevel Operator/Administrator in
        accounts.conf (as it is now: a new operator needs no restart)."""
        return self._operators | self.associations().operators()

    def requester(self, user: str, submitter: str | None = None) -> Requester:
        """``user`` as the access rules (:mod:`minislurm.sched.access`) see them: their privileges
        (those of ``submitter`` when root submits for them), Unix groups and associations.
        root is in account root, as in every tree (:class:`AssociationTree`)."""
        tree = self.associations()
        asker = submitter or user
        accounts = tuple(tree.accounts_of(user))
        return Requester(user, operator=asker in self.operators,
                         super_user=asker in self.super_users, groups=_groups(user), accounts=accounts)

    def job_owner(self, user: str, uid: str | None) -> str:
        """Whose job it is: the submitter's, or with ``--uid`` (root's and SlurmUser's to give,
        checked by the access rules) the named or numbered user's."""
        if uid is None or user not in self.super_users:
            return user
        try:
            return pwd.getpwuid(int(uid)).pw_name if uid.strip().isdigit() else pwd.getpwnam(uid.strip()).pw_name
        except (KeyError, ValueError, OverflowError):
            raise SlurmError(errors.USER_ID_MISSING) from None

    def may_modify(self, user: str, job: Job) -> None:
        if user != job.user and user not in self.operators:
            raise SlurmError(errors.ACCESS_DENIED)

    def tasks_per_node(self, job: Job) -> list[int]:
        """The job's tasks laid out over the CPUs it holds (SLURM_TASKS_PER_NODE)."""
        ntasks = job.ntasks or job.num_nodes
        spec = job.spec
        try:
            return node_tasks(ntasks, list(job.alloc.cpus), getattr(spec, "cpus_per_task", None) or 1,
                              getattr(spec, "ntasks_per_node", None))
        except ValueError:  # more tasks than CPUs (--overcommit)
            return block(ntasks, job.num_nodes)


def _groups(user: str) -> frozenset[str]:
    """The names of a user's Unix groups (AllowGroups); none for a user this host does not know."""
    try:
        pw = pwd.getpwnam(user)
        gids = os.getgrouplist(user, pw.pw_gid)
    except (KeyError, OSError):
        return frozenset()
    names = set()
    for gid in gids:
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return frozenset(names)
