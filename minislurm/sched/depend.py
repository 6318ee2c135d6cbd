"""Job dependencies (``-d``): is each condition met, still waiting, or impossible for good?

``after`` waits for the other job to start (or be cancelled), ``afterany`` for it to end,
``afterok``/``afternotok`` for it to end well/badly, ``aftercorr`` for the same-index task of
another array to end well, ``singleton`` until no other job of the same name and user runs
and none submitted earlier still pends.  "Once a job dependency fails ... the dependent job
will never be run, even if the preceding job is requeued."

Results are sticky, as in slurmctld (``test_job_dependency`` marks each item
``DEPEND_FULFILLED`` or ``DEPEND_FAILED`` once and never looks at it again).  The scheduler
stays pure, so :func:`sweep` only *reports* what a pass found settled; the caller records it
with :meth:`~minislurm.core.state.ClusterState.settle_dependencies`.
"""

from __future__ import annotations

from collections.abc import Mapping

from minislurm.core.deps import Dependency
from minislurm.core.job import Job
from minislurm.core.state import ClusterState
from minislurm.core.states import DependencyOutcome, JobState

OK, WAIT, NEVER = DependencyOutcome.OK, DependencyOutcome.WAIT, DependencyOutcome.NEVER


def _one(kind: str, target: Job) -> str:
    state = target.state
    if kind == "after":
        started = state is not JobState.PENDING or target.start_time is not None
        return OK if started else WAIT
    if not state.finished:
        return WAIT
    good = state is JobState.COMPLETED and target.exit_code == 0
    if kind in ("afterany",):
        return OK
    if kind in ("afterok", "aftercorr"):
        return OK if good else NEVER
    if kind == "afternotok":
        return NEVER if good else OK
    return NEVER


def _targets(job_id: int, jobs: Mapping[int, Job], array_tasks: Mapping[int, list[int]]) -> list[Job]:
    """A dependency on an array's id means every task of the array."""
    tasks = array_tasks.get(job_id)
    if tasks:
        return [jobs[t] for t in tasks if t in jobs]
    return [jobs[job_id]] if job_id in jobs else []


def _corresponding(job: Job, targets: list[Job]) -> list[Job]:
    """``aftercorr``: the task of the other array with this task's index, when there is one;
    otherwise the whole target, as slurmctld's ``_test_job_dependency_common`` does."""
    if job.array_task_id is not None:
        same = [t for t in targets if t.array_task_id == job.array_task_id]
        if same:
            return same
    return targets


Singletons = tuple[set[tuple[str, str]], dict[tuple[str, str], int]]


def singleton_index(jobs: Mapping[int, Job]) -> Singletons:
    """The (name, user) pairs with a running or suspended job, and per pair the lowest pending
    job id.  One scan of the job table serves every ``singleton`` job of a pass."""
    active: set[tuple[str, str]] = set()
    lowest: dict[tuple[str, str], int] = {}
    for other in jobs.values():
        key = (other.name, other.user)
        if other.state in (JobState.RUNNING, JobState.SUSPENDED):
            active.add(key)
        elif other.state is JobState.PENDING and other.job_id < lowest.get(key, other.job_id + 1):
            lowest[key] = other.job_id
    return active, lowest


def _singleton_blocked(job: Job, jobs: Mapping[int, Job], index: Singletons | None) -> bool:
    """Another job of this name and user is running or suspended (whatever its id), or was
    submitted earlier and still pends: slurmctld's ``_find_singleton_job``; the man page:
    "only one job by that name and owned by that user can be running or suspended"."""
    if index is not None:
        key = (job.name, job.user)
        return key in index[0] or index[1].get(key, job.job_id) < job.job_id
    for other in jobs.values():
        if other is job or other.name != job.name or other.user != job.user:
            continue
        if other.state in (JobState.RUNNING, JobState.SUSPENDED):
            return True
        if other.state is JobState.PENDING and other.job_id < job.job_id:
            return True
    return False


def evaluate(job: Job, jobs: Mapping[int, Job], array_tasks: Mapping[int, list[int]],
             singletons: Singletons | None = None) -> tuple[str, Dependency | None]:
    """OK, WAIT or NEVER for the job's whole expression, and what is left to wait on.

    The remainder drops the items settled for good: met ones from an AND list, failed ones
    from an OR list (neither can change the outcome any more).  It is ``job.dependency``
    itself when nothing was dropped.
    """
    dep = job.dependency
    if dep is None:
        return OK, None
    results: list[str] = []
    left: list[tuple[str, tuple[int, ...]]] = []
    drop = NEVER if dep.any_of else OK  # an item that can no longer change the outcome
    for kind, ids in dep.terms:
        if kind == "singleton":
            items = [(0, WAIT if _singleton_blocked(job, jobs, singletons) else OK)]
        else:
            items = [(i, item_outcome(kind, i, job, jobs, array_tasks)) for i in ids]
        results += [r for _, r in items]
        keep = [i for i, r in items if r != drop]
        if keep:
            left.append((kind, ids if kind == "singleton" else tuple(keep)))
    if dep.any_of:
        outcome = OK if OK in results else WAIT if WAIT in results else NEVER
    else:
        outcome = NEVER if NEVER in results else WAIT if WAIT in results else OK
    if outcome != WAIT or drop not in results:
        return outcome, dep
    return outcome, Dependency(terms=tuple(left), any_of=dep.any_of)


def item_outcome(kind: str, job_id: int, job: Job, jobs: Mapping[int, Job],
                 array_tasks: Mapping[int, list[int]]) -> DependencyOutcome:
    """One item (``afterok:12``) of ``job``'s dependency: OK, WAIT or NEVER.  The one rule
    both the pass and ``scontrol show job``'s text use."""
    targets = _targets(job_id, jobs, array_tasks)
    if not targets:  # purged from memory: Slurm treats it as satisfied
        return OK
    if kind == "aftercorr":
        targets = _corresponding(job, targets)
    each = [_one(kind, t) for t in targets]
    return NEVER if NEVER in each else WAIT if WAIT in each else OK


def status(job: Job, jobs: Mapping[int, Job], array_tasks: Mapping[int, list[int]]) -> str:
    """OK, WAIT or NEVER for the job's whole dependency expression."""
    return evaluate(job, jobs, array_tasks)[0]


def sweep(state: ClusterState) -> tuple[dict[int, str], dict[int, str | Dependency]]:
    """Test every pending job's dependencies once, on the state before the pass starts anything.

    Returns each tested job's status (so the pass need not test it again) and what became
    final: OK (all met: clear it), NEVER (can no longer be met: keep it failed
    even if a target is requeued), or the narrower :class:`Dependency` still to wait on.
    Every pending job is tested, not only those the pass reaches, as slurmctld's
    ``build_job_queue`` does, so a result is recorded before a target can change again;
    except held jobs, which slurmctld's ``job_independent`` skips (a held singleton must
    not be cleared while it cannot run and another job of its name starts).
    """
    if not state.with_dependency:
        return {}, {}
    waiting = [j for j in map(state.pending.get, sorted(state.with_dependency))
               if j is not None and j.dependency is not None and not j.dependency_failed and not j.hold]
    found: dict[int, str] = {}
    settled: dict[int, str | Dependency] = {}
    if not waiting:
        return found, settled
    singletons = None
    if any(kind == "singleton" for j in waiting for kind, _ in j.dependency.terms):
        singletons = singleton_index(state.jobs)
    for job in waiting:
        result, rest = evaluate(job, state.jobs, state.array_tasks, singletons)
        found[job.job_id] = result
        if result != WAIT:
            settled[job.job_id] = result
        elif rest is not job.dependency:
            settled[job.job_id] = rest
    return found, settled
