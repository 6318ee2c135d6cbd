"""Where a step runs inside its job, and what it holds there while it runs: its nodes, tasks,
CPUs and GPUs, out of what the job's other running steps leave.

Slurm 22.05 gives every step its own share of its job on each node (checked on the twin:
tests/live/sessions.py, session ``step_gpus``):

* CPUs: all of the job's CPUs on the node, unless the step asks for only what its tasks
  need (``--exact``, ``--exclusive``, or ``-c``, which implies it): ``-c`` (1) per task.
* GPUs: what it asks for, the lowest free indices: ``--gres=gpu:N`` or ``--gpus-per-node=N``
  on each node, ``--gpus=N`` in all (shared out, the first nodes taking more), ``--gpus-per-task=N``
  for each task; with no GPU option, all of the job's GPUs on the node.
* Memory is not shared out: a step may use all of its job's (sacct shows what it asked for).

A step whose share is held by running steps waits (``Requested nodes are busy``); one that
could not run even in an idle job is refused with Slurm's reason.  An ``--overlap`` step
neither waits for nor holds anything.  A step on fewer nodes than its job prefers nodes where
no step runs, then the job's nodes in order.  The controller (ctld/steps.py) and the labs'
srun model (lab/srun_model.py) both lay steps out here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields

from minislurm.core import errors
from minislurm.core.layout import node_tasks, task_ids

# What the job's running steps hold on a node: CPUs, and GPU indices.
Held = Mapping[str, tuple[int, Collection[int]]]


class StepLayoutError(ValueError):
    """A step that cannot be laid out inside its job; the text is Slurm's reason, ``note`` a
    line srun prints before it (22.05 explains some GRES refusals so)."""

    def __init__(self, reason: str, note: str | None = None):
        super().__init__(reason)
        self.note = note


class StepBusy(StepLayoutError):
    """The step fits in its job, but not beside the steps running now: it waits."""

    def __init__(self):
        super().__init__(errors.NODES_BUSY)


@dataclass(frozen=True)
class StepRequest:
    """What srun asks of a step (its options; the field names are the request's JSON keys)."""

    nodelist: tuple[str, ...] = ()  # -w
    nodes: int | None = None  # -N
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None  # -c, which implies --exact
    overcommit: bool = False
    gpus_per_node: int | None = None  # --gres=gpu:N, --gpus-per-node=N
    gpus: int | None = None  # --gpus=N: the step's GPUs in all
    gpus_per_task: int | None = None
    exact: bool = False  # --exact, --exclusive
    overlap: bool = False
    mem_per_cpu: int | None = None  # MB; only recorded (sacct's AllocTRES): memory is not shared out
    mem: int | None = None  # MB per node; likewise

    @classmethod
    def from_options(cls, spec, cli, *, inside: bool) -> "StepRequest":
        """What srun asks for: ``spec`` holds all its options (input variables such as the batch
        script's SLURM_NTASKS and SLURM_MEM_PER_CPU included), ``cli`` those of its command line.
        GPUs per node or in all, and (inside a job) a node count, count from the command line
        only: the job's own, in the environment, are what its steps share."""
        gres = [g.count for g in spec.gres or () if g.name == "gpu"]
        per_node = None
        if cli.gres or cli.gpus_per_node:
            per_node = gres[0] if gres else spec.gpus_per_node[1] if spec.gpus_per_node else None
        return cls(nodelist=tuple(spec.nodelist or ()), nodes=spec.nodes_min if (cli.nodes_min or not inside) else None,
                   ntasks=spec.ntasks, ntasks_per_node=spec.ntasks_per_node, cpus_per_task=spec.cpus_per_task,
                   overcommit="overcommit" in spec.extra, gpus_per_node=per_node,
                   gpus=cli.gpus[1] if cli.gpus else None,
                   gpus_per_task=spec.gpus_per_task[1] if spec.gpus_per_task else None,
                   exact="exact" in spec.extra or (inside and bool(spec.exclusive)), overlap="overlap" in spec.extra,
                   mem_per_cpu=spec.mem_per_cpu_mb, mem=spec.mem_mb)

    @classmethod
    def of(cls, body: Mapping) -> "StepRequest":
        """From a request's JSON (absent or null keys keep their defaults)."""
        given = {f.name: body[f.name] for f in fields(cls) if body.get(f.name) is not None}
        if "nodelist" in given:
            given["nodelist"] = tuple(given["nodelist"])
        return cls(**given)

    @property
    def whole(self) -> bool:
        """The step takes all of the job's CPUs on its nodes (no --exact and no -c)."""
        return not self.exact and self.cpus_per_task is None


@dataclass(frozen=True)
class StepLayout:
    nodes: list[str]
    tasks_per_node: list[int]
    task_ids: list[list[int]]
    ntasks: int
    cpus: list[int]  # the CPUs the step holds on each of its nodes
    gpus: dict[str, list[int]]  # the GPU indices it holds on each


def step_layout(job_nodes: Sequence[str], job_cpus: Sequence[int], job_gpus: Mapping[str, Sequence[int]],
                req: StepRequest = StepRequest(), *, job_ntasks: int | None = None, held: Held | None = None,
                job_gpu_request: tuple[str, int] | None = None) -> StepLayout:
    """Where a step of a job on ``job_nodes`` (with ``job_cpus`` CPUs and ``job_gpus`` GPU
    indices on each) runs, and what it holds, beside what ``held`` says its running steps
    hold.  Its nodes: the job's (``-w`` some, ``-N`` so many); its tasks: ``-n``, else
    ``--ntasks-per-node`` times the nodes, else the job's ``-n`` unless ``-N`` was given, else
    one a node (fewer tasks than nodes use that many nodes), filled in block order.
    ``job_gpu_request`` is how the job asked for GPUs (``("node", 4)`` for ``--gres=gpu:4``,
    ``("job", 4)`` for ``--gpus=4``), for 22.05's notes.  Raises StepLayoutError with Slurm's
    reason, StepBusy when only running steps are in the way."""
    cpus_of = dict(zip(job_nodes, job_cpus))
    candidates = list(job_nodes)
    if req.nodelist:
        if any(n not in cpus_of for n in req.nodelist):
            raise StepLayoutError(errors.NODE_CONFIG_UNAVAILABLE)
        candidates = [n for n in job_nodes if n in req.nodelist]
    k = req.nodes or len(candidates)
    if k > len(candidates):
        raise StepLayoutError(errors.NODE_CONFIG_UNAVAILABLE)
    count = req.ntasks or (req.ntasks_per_node * k if req.ntasks_per_node else None)
    if count is None:
        count = job_ntasks if (job_ntasks and not req.nodes) else k
    if not req.nodes:
        k = min(k, count)
    _check_gpu_request(req, job_gpus, job_gpu_request)
    idle = {n: (cpus_of[n], list(job_gpus.get(n, ()))) for n in candidates}
    layout = _fit(req, candidates, k, count, cpus_of, job_gpus, idle, set())  # the job's own limits
    busy = {n: h for n, h in (held or {}).items() if n in idle and (h[0] or h[1])}
    if req.overlap or not busy:
        return layout
    free = {n: (c - busy[n][0], [g for g in gpus if g not in busy[n][1]]) if n in busy else (c, gpus)
            for n, (c, gpus) in idle.items()}
    try:
        return _fit(req, candidates, k, count, cpus_of, job_gpus, free, set(busy))
    except StepLayoutError:
        raise StepBusy() from None


def _check_gpu_request(req: StepRequest, job_gpus: Mapping[str, Sequence[int]],
                       job_request: tuple[str, int] | None) -> None:
    """The refusals 22.05 explains with a line of its own: GPUs in a job that has none, and
    more than the job asked for in the same terms (per node, or in all)."""
    if not (req.gpus_per_node or req.gpus or req.gpus_per_task):
        return
    if not any(job_gpus.values()):
        raise StepLayoutError(errors.INVALID_GRES, "Step requested GRES but job doesn't have GRES")
    kind, count = job_request or ("", 0)
    if kind == "node" and (req.gpus_per_node or 0) > count:
        raise StepLayoutError(errors.INVALID_GRES, f"Step requested gres_per_node=gpu:{req.gpus_per_node} is "
                                                   f"more than the job's gres_per_node=gpu:{count}")
    if kind == "job" and (req.gpus or 0) > count:
        raise StepLayoutError(errors.INVALID_GRES,
                              f"Step requested gres=gpu:{req.gpus} is more than the job's gres=gpu:{count}")


def _fit(req: StepRequest, candidates: list[str], k: int, count: int, job_cpus: Mapping[str, int],
         job_gpus: Mapping[str, Sequence[int]], free: Mapping[str, tuple[int, list[int]]],
         busy: set[str]) -> StepLayout:
    """The step on ``k`` of ``candidates`` with what is ``free`` there (CPUs, GPU indices);
    nodes in ``busy`` are taken only after the others."""
    cpt = req.cpus_per_task or 1

    def cpus(n: str) -> int:  # what the step may lay its tasks over on n
        c = free[n][0]
        return c if not req.whole or c == job_cpus[n] else 0  # a whole step needs every CPU there

    def gpus_for_one(n: str) -> int:  # what the step needs free there to take the node at all
        if req.gpus_per_node is not None:
            return req.gpus_per_node
        if req.gpus_per_task or req.gpus:
            return req.gpus_per_task or 1
        return len(job_gpus.get(n, ()))

    chosen = candidates
    if k < len(candidates):
        fits = [n for n in sorted(candidates, key=lambda n: n in busy)
                if cpus(n) >= cpt and len(free[n][1]) >= gpus_for_one(n)]
        if len(fits) < k:
            raise StepLayoutError(errors.TOO_MANY_CPUS)
        picked = set(fits[:k])
        chosen = [n for n in candidates if n in picked]
    try:
        counts = node_tasks(count, [cpus(n) for n in chosen], cpt, req.ntasks_per_node, overcommit=req.overcommit)
    except ValueError:
        raise StepLayoutError(errors.TOO_MANY_CPUS) from None
    want = _gpus_wanted(req, chosen, counts, job_gpus)
    gpus = {}
    for n, w in zip(chosen, want):
        if w > len(free[n][1]):
            raise StepLayoutError(errors.INSUFFICIENT_GRES if req.gpus_per_node is None and req.gpus_per_task
                                  else errors.INVALID_GRES)
        gpus[n] = sorted(free[n][1])[:w]
    held = [cpus(n) if req.whole else min(c * cpt, cpus(n)) for n, c in zip(chosen, counts)]
    return StepLayout(chosen, counts, task_ids(counts), count, held, gpus)


def _gpus_wanted(req: StepRequest, nodes: list[str], counts: list[int],
                 job_gpus: Mapping[str, Sequence[int]]) -> list[int]:
    """How many GPUs the step takes on each of its nodes."""
    if req.gpus_per_node is not None:
        return [req.gpus_per_node] * len(nodes)
    if req.gpus_per_task:
        return [req.gpus_per_task * c for c in counts]
    if req.gpus:
        base, extra = divmod(req.gpus, len(nodes))
        return [base + (i < extra) for i in range(len(nodes))]
    return [len(job_gpus.get(n, ())) for n in nodes]
