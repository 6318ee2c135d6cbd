"""Submission: turn a JobSpec into schedulable jobs, or refuse it with Slurm's message.

Slurm accepts a job that cannot run *now* (busy nodes, a partition that is down, a time
limit over MaxTime with the default EnforcePartLimits=NO: it pends with a reason), but
refuses one that can *never* run: no node of the partition, in any state, is big enough
(``Requested node configuration is not available``), or an unknown GRES is asked for.

minislurm gives every node of a job the same shape: the largest per-node share of the tasks
(Slurm may give nodes different task counts; ``SLURM_TASKS_PER_NODE`` still shows the block
layout).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

from minislurm.core import errors
from minislurm.core.cluster import ClusterConfig, PartitionConfig
from minislurm.core.errors import SlurmError
from minislurm.core.deps import Dependency
from minislurm.core.job import Job, Shape, task_key
from minislurm.core.spec import ArraySpec, JobSpec
from minislurm.core.state import ClusterState
from minislurm.sched import access
from minislurm.sched.access import Requester
from minislurm.sched.select.cons_tres import fits_capacity

# ESLURM_PARTITION_NOT_AVAIL (slurm_errno.c); kept here as core/errors.py lacks it.
PARTITION_NOT_AVAIL = "Required partition not available (inactive or drain)"


class NeverRuns(SlurmError):
    """No node could ever hold the job.  slurmctld finds this only after it has created the job
    record (its submit-time ``select_nodes`` test), so the request uses up a job id and is
    accounted FAILED; ``job`` is that record."""

    def __init__(self, message: str, job: Job):
        super().__init__(message)
        self.job = job


def build_jobs(spec: JobSpec, state: ClusterState, *, first_id: int, user: str, now: float,
               default_name: str = "sbatch", who: Requester | None = None) -> list[Job]:
    """Validate ``spec`` and return its jobs (one, or one per array task), with the id
    ``first_id`` (an array's tasks under keys of their own, :func:`_build`) and not yet queued; ``state`` is only read.  The caller owns the id counter
    (:meth:`ClusterState.used_job_ids`): a refusal by :class:`NeverRuns` uses ``first_id`` too.
    ``who`` is the submitting user as the controller knows them (:mod:`minislurm.sched.access`);
    without one the request is trusted, as the lab models' are.

    The steps check in the order slurmctld does (``validate_job_create_req``, ``_job_create``
    in job_mgr.c, then its submit-time ``select_nodes`` test), so a request with several faults
    gets Slurm's message: the privileged options (nice, uid/gid) -> validate the names (``-w``,
    partition and its groups, GRES, ``-x``) -> the account -> lay the tasks out on nodes (node
    count) -> shape each node's share -> check the references (reservation, dependency) and
    whether any node could ever hold it -> build the jobs.
    """
    who = who or Requester(user)
    access.check_nice(spec.nice, who)
    access.check_identity(spec.extra.get("uid"), spec.extra.get("gid"), who)
    part, gpus = _validate(spec, state)
    access.check_partition(part, who)
    account = access.job_account(spec.account, who, state.config)
    nodes, tasks, per_node = _node_layout(spec, state, part, gpus)
    shape = _shape(spec, state.config, nodes, per_node, gpus, tasks)
    dependency = _check_references(spec, state, user, account)
    fixed = access.given_priority(spec.extra.get("priority"), who)
    hold = "user" if spec.hold else None
    if fixed == 0:  # an operator's --priority=0 holds the job, as scontrol hold does
        fixed, hold = None, "admin"
    template = job_template(
        part, state.config, user=user, account=account, name=spec.job_name or default_name, now=now,
        time_limit=spec.time_limit_min * 60 if spec.time_limit_min is not None else None,
        num_nodes=nodes, shape=shape, exclusive=bool(spec.exclusive), requeue=spec.requeue,
        ntasks=tasks, nice=spec.nice or 0, hold=hold, fixed_priority=fixed, begin_time=spec.begin or 0.0,
        dependency=dependency, kill_on_invalid_dep=bool(spec.kill_on_invalid_dep),
        req_nodes=frozenset(spec.nodelist or ()), exc_nodes=frozenset(spec.exclude or ()),
        reservation=spec.reservation, spec=spec)
    if not could_ever_run(Job(0, **template), state):
        raise NeverRuns(errors.NODE_CONFIG_UNAVAILABLE, Job(first_id, **template))
    return _build(template, spec.array, first_id)


# -- admission: the rules the controller and the simulator share --------------------------
def job_template(part: PartitionConfig, config: ClusterConfig, *, user: str, account: str, name: str,
                 now: float, time_limit: float | None, num_nodes: int, shape: Shape, exclusive: bool = False,
                 requeue: bool | None = None, **request) -> dict:
    """The one template every job is made from, an ``sbatch`` request (:func:`build_jobs`) or
    a trace's record (:func:`record_jobs`): what the request says, with the partition's and the
    cluster's defaults filled in where it says nothing -- the time limit (the partition's
    DefaultTime, else its MaxTime), whole nodes on an ``OverSubscribe=EXCLUSIVE`` partition,
    and ``JobRequeue``.  ``request`` holds the other :class:`Job` fields the request sets."""
    if time_limit is None:
        time_limit = part.default_time if part.default_time is not None else part.max_time
    return dict(user=user, account=account, partition=part.name, name=name, submit_time=now,
                time_limit=time_limit, num_nodes=num_nodes, shape=shape, exclusive=exclusive or part.exclusive,
                requeue=config.job_requeue if requeue is None else requeue, **request)


def record_jobs(job_id: int, state: ClusterState, *, partition: str | None, now: float, user: str, account: str,
                name: str, time_limit: float, num_nodes: int, shape: Shape, reservation: str | None = None,
                dependency: Dependency | None = None, array: ArraySpec | None = None) -> list[Job]:
    """A trace's record as the jobs the controller would have made of it (the simulator's
    admission): one, or one per array task; ``partition`` None is the default one.  Raises
    SlurmError for a partition the cluster lacks; what else would refuse it is :func:`refusal`'s."""
    part = state.config.partition(partition)
    if part is None:
        raise SlurmError(errors.INVALID_PARTITION)
    return _build(job_template(part, state.config, user=user, account=account, name=name, now=now,
                               time_limit=time_limit, num_nodes=num_nodes, shape=shape,
                               reservation=reservation, dependency=known_dependency(dependency, state)),
                  array, job_id)


def closed_to_submissions(part: PartitionConfig) -> bool:
    """ESLURM_PARTITION_NOT_AVAIL: a DRAIN or INACTIVE partition lacks PARTITION_SUBMIT
    (job_mgr.c ``_alt_part_test``); a DOWN one still queues jobs (PartitionDown)."""
    return part.state in ("DRAIN", "INACTIVE")


def could_ever_run(job: Job, state: ClusterState) -> bool:
    """Whether enough nodes of the job's partition (every ``-w`` node among them, no ``-x``
    node) are big enough for it even when idle.  A job asking for more nodes than the
    partition has is not refused here: it pends with PartitionNodeLimit."""
    capable = fits_capacity(job, state.nodes) & state.partition_mask(job.partition)
    for name in job.exc_nodes:
        capable[state.nodes.index[name]] = False
    if job.req_nodes and not all(capable[state.nodes.index[n]] for n in job.req_nodes):
        return False
    return job.num_nodes > len(state.partitions[job.partition].nodes) or capable.sum() >= job.num_nodes


def refusal(job: Job, state: ClusterState, *, enforce_part_limits: bool = False) -> str | None:
    """Slurm's message refusing a job built elsewhere than from a JobSpec (a trace's job), or
    None to queue it: the checks :func:`build_jobs` makes of the partition and the nodes.

    ``enforce_part_limits`` (Slurm's ``EnforcePartLimits=ALL``) also refuses what would
    otherwise pend for good with a partition reason (a DOWN partition, a time limit over
    MaxTime, more nodes than MaxNodes or the partition has).  The controller runs with
    Slurm's default, NO; the simulator enforces them, as a replay must not wait forever.
    """
    part = state.partitions.get(job.partition)
    if part is None:
        return errors.INVALID_PARTITION
    if closed_to_submissions(part):
        return PARTITION_NOT_AVAIL
    if enforce_part_limits:
        if part.state == "DOWN":
            return errors.PART_CONFIG_UNAVAILABLE
        if job.time_limit > part.max_time:
            return errors.INVALID_TIME_LIMIT
        if not access.account_allowed(part, job.account):
            return errors.INVALID_ACCOUNT
        if job.num_nodes > min(part.max_nodes, len(part.nodes)):
            return errors.NODE_CONFIG_UNAVAILABLE
    if not could_ever_run(job, state):
        return errors.NODE_CONFIG_UNAVAILABLE
    return None


# -- the steps ---------------------------------------------------------------------------
def _validate(spec: JobSpec, state: ClusterState) -> tuple[PartitionConfig, GpuRequest]:
    """``-w`` names, the partition, GRES, ``-x`` names and their overlap with ``-w``."""
    for name in spec.nodelist or ():
        if name not in state.nodes.index:
            raise SlurmError(errors.INVALID_NODE_NAME)
    part = state.config.partition(spec.partition.split(",")[0] if spec.partition else None)
    if part is None:
        raise SlurmError(errors.INVALID_PARTITION)
    if closed_to_submissions(part):
        raise SlurmError(PARTITION_NOT_AVAIL)
    gpus = _gpu_request(spec, state.config.gres_types)
    for name in spec.exclude or ():
        if name not in state.nodes.index:
            raise SlurmError(errors.INVALID_NODE_NAME)
    if set(spec.nodelist or ()) & set(spec.exclude or ()):
        raise SlurmError(errors.INVALID_NODE_NAME)  # "Job's required and excluded node lists overlap"
    return part, gpus


class GpuRequest(NamedTuple):
    """What a job asks of GPUs: ``count`` per node, per task or for the whole job (``kind``)."""

    type: str | None
    count: int
    kind: str  # "node", "task" or "job"


def _gpu_request(spec: JobSpec, gres_types: set[str]) -> GpuRequest:
    """The job's GPU request; count 0 when it asks for none.  Refuses an unknown GRES."""
    for item in spec.gres or ():
        if item.name not in gres_types:
            raise SlurmError(errors.INVALID_GRES)
    gpu_items = [g for g in spec.gres or () if g.name == "gpu"]
    wants_gpu = gpu_items or spec.gpus or spec.gpus_per_node or spec.gpus_per_task
    if wants_gpu and "gpu" not in gres_types:
        raise SlurmError(errors.INVALID_GRES)
    if gpu_items:
        return GpuRequest(gpu_items[0].type, sum(g.count for g in gpu_items), "node")
    if spec.gpus_per_node:
        return GpuRequest(spec.gpus_per_node[0], spec.gpus_per_node[1], "node")
    if spec.gpus_per_task:
        return GpuRequest(spec.gpus_per_task[0], spec.gpus_per_task[1], "task")
    if spec.gpus:
        return GpuRequest(spec.gpus[0], spec.gpus[1], "job")
    return GpuRequest(None, 0, "node")


def _node_layout(spec: JobSpec, state: ClusterState, part: PartitionConfig,
                 gpus: GpuRequest) -> tuple[int, int, int]:
    """(nodes, tasks, tasks per node) sized on the partition's biggest node; refuses a bad count."""
    members = [n for n in map(state.config.node, part.nodes) if n]
    max_cpus = max((n.cpus for n in members), default=0)
    max_gpus = max((n.gpus for n in members), default=0)
    nodes, tasks, per_node = _layout(spec, max_cpus, max_gpus, gpus.count, gpus.kind,
                                     len(set(spec.nodelist or ())))
    if nodes < 1 or (spec.nodes_max is not None and spec.nodes_max < nodes):
        raise SlurmError(errors.INVALID_NODE_COUNT)
    if spec.ntasks is not None and spec.nodes_min and spec.ntasks < spec.nodes_min:
        nodes = spec.ntasks  # Slurm shrinks the node count to the task count
    return nodes, tasks, per_node


def _layout(spec: JobSpec, max_cpus: int, max_gpus: int, gpus: int, gpu_kind: str,
            listed: int = 0) -> tuple[int, int, int]:
    """(nodes, tasks, tasks per node on the fullest node).

    ``listed`` is the number of ``-w`` nodes: the job gets at least that many (slurmctld's
    ``_job_create`` raises ``min_nodes`` to the size of the required node list), and its
    tasks are spread over all of them.
    """
    cpt = spec.cpus_per_task or 1
    if spec.nodes_min:
        nodes = spec.nodes_min
    elif spec.ntasks:
        per_node = spec.ntasks_per_node or max(1, max_cpus // cpt)
        if gpu_kind == "task" and gpus:
            per_node = min(per_node, max(1, max_gpus // gpus))
        nodes = math.ceil(spec.ntasks / per_node)
    elif gpu_kind == "job" and gpus and max_gpus:
        nodes = math.ceil(gpus / max_gpus)
    else:
        nodes = 1
    nodes = max(nodes, listed)
    if spec.ntasks:
        tasks = spec.ntasks
    elif spec.ntasks_per_node:
        tasks = spec.ntasks_per_node * nodes
    else:
        tasks = nodes
    per_node = math.ceil(tasks / nodes)
    if spec.ntasks_per_node:
        per_node = min(per_node, spec.ntasks_per_node) if spec.ntasks else spec.ntasks_per_node
    return nodes, tasks, per_node


def _shape(spec: JobSpec, cfg: ClusterConfig, nodes: int, per_node: int, gpus: GpuRequest,
           tasks: int = 0) -> Shape:
    """Each node's share: CPUs for its tasks, memory (``--mem``, ``--mem-per-cpu`` or the
    defaults), GPUs per node.  A ``-n`` job on several nodes keeps its task count, for the
    nodes to be filled in order when it starts (GPUs per task excepted: their count follows
    the tasks, so those tasks stay evenly spread)."""
    cpt = spec.cpus_per_task or 1
    cpus = per_node * cpt
    gpus_per_node = {"node": gpus.count, "task": gpus.count * per_node,
                     "job": math.ceil(gpus.count / nodes) if gpus.count else 0}[gpus.kind]
    per_cpu = 0
    if spec.mem_mb is not None:
        mem = -1 if spec.mem_mb == 0 else spec.mem_mb
    elif spec.mem_per_cpu_mb is not None or cfg.def_mem_per_cpu:
        per_cpu = spec.mem_per_cpu_mb if spec.mem_per_cpu_mb is not None else cfg.def_mem_per_cpu
        mem = per_cpu * cpus
    else:
        mem = cfg.def_mem_per_node or 0
    if not spec.ntasks or nodes < 2 or (gpus.kind == "task" and gpus.count):
        return Shape(cpus=cpus, mem=mem, gpus=gpus_per_node, gpu_type=gpus.type)
    return Shape(cpus=cpus, mem=mem, gpus=gpus_per_node, gpu_type=gpus.type, tasks=tasks, cpus_per_task=cpt,
                 mem_per_cpu=per_cpu, max_tasks_per_node=spec.ntasks_per_node or 0)


def _check_references(spec: JobSpec, state: ClusterState, user: str, account: str) -> Dependency | None:
    """The reservation exists and admits the user.  Returns the dependency without the job
    ids nobody knows (:func:`known_dependency`)."""
    if spec.reservation is not None:
        resv = state.reservations.get(spec.reservation)
        if resv is None:
            raise SlurmError(errors.INVALID_RESERVATION)
        access.check_reservation(resv, user, account)
    return known_dependency(spec.dependency, state)


def known_dependency(dependency: Dependency | None, state: ClusterState) -> Dependency | None:
    """The dependency without the job ids nobody knows: Slurm 22.05 drops them (a job never
    run, or long gone) and, when nothing is left, the job has no dependency."""
    if dependency is None:
        return None
    terms = tuple((kind, known) for kind, ids in dependency.terms
                  if (known := tuple(i for i in ids if i in state.jobs or i in state.array_tasks))
                  or kind == "singleton")
    return replace(dependency, terms=terms) if terms else None


def _build(template: dict, array: ArraySpec | None, first_id: int) -> list[Job]:
    """The job, or one job per array task.  An array takes one id, its own: its tasks wait in
    its record under keys of their own (:func:`task_key`) and get real ids as they start."""
    if array is None:
        return [Job(first_id, **template)]
    jobs = [Job(task_key(first_id, index), **template) for index in array.indices]
    for job, index in zip(jobs, array.indices):
        job.array_job_id, job.array_task_id = first_id, index
        job.array_max_running = array.max_running
    return jobs
