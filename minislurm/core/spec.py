"""JobSpec: the options of one sbatch/srun request, as the user gave them.

Every field is ``None`` when the option was not given, so the three option sources
(script directives < ``SBATCH_*`` environment < command line) can be layered with
:meth:`JobSpec.merged`.  Turning a JobSpec into a schedulable :class:`~minislurm.core.job.Job`
(node count, per-node shape) needs the cluster, and happens in :mod:`minislurm.sched.submit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from minislurm.core.deps import Dependency

MAX_SCRIPT_SIZE = 4 * 1024 * 1024  # bytes, Slurm's default SchedulerParameters=max_script_size


@dataclass(frozen=True, slots=True)
class GresRequest:
    """One ``name[:type]:count`` item of ``--gres`` (per node)."""

    name: str
    type: str | None
    count: int

    def __str__(self) -> str:
        return ":".join(x for x in (self.name, self.type, str(self.count)) if x)


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """``--array=0-15:4%2``: the task indices in order and the ``%`` throttle."""

    indices: tuple[int, ...]
    max_running: int | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class SignalSpec:
    """``--signal=[{R|B}:]<sig>[@sec]``; ``batch_only`` for ``B:``."""

    signal: int
    seconds: int = 60
    batch_only: bool = False
    reservation: bool = False


@dataclass(slots=True)
class JobSpec:
    job_name: str | None = None
    partition: str | None = None
    account: str | None = None
    nodes_min: int | None = None
    nodes_max: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    mem_mb: int | None = None  # per node; 0 means all of the node's memory
    mem_per_cpu_mb: int | None = None
    gres: tuple[GresRequest, ...] | None = None
    gpus: tuple[str | None, int] | None = None  # --gpus=[type:]N, total for the job
    gpus_per_node: tuple[str | None, int] | None = None
    gpus_per_task: tuple[str | None, int] | None = None
    time_limit_min: float | None = None  # minutes; math.inf for INFINITE/UNLIMITED/0
    time_min_min: float | None = None
    output: str | None = None
    error: str | None = None
    input: str | None = None
    open_mode: str | None = None  # "append" or "truncate"
    requeue: bool | None = None
    dependency: Dependency | None = None
    array: ArraySpec | None = None
    signal: SignalSpec | None = None
    exclusive: bool | None = None
    nice: int | None = None
    begin: float | None = None  # absolute epoch seconds
    nodelist: tuple[str, ...] | None = None  # -w, expanded
    exclude: tuple[str, ...] | None = None  # -x, expanded
    hold: bool | None = None
    parsable: bool | None = None
    wrap: str | None = None
    chdir: str | None = None
    export: str | None = None
    reservation: str | None = None
    wait: bool | None = None
    test_only: bool | None = None
    kill_on_invalid_dep: bool | None = None
    comment: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def merged(self, override: "JobSpec") -> "JobSpec":
        """A copy where every option set in ``override`` replaces ours (later source wins)."""
        changes = {
            f.name: getattr(override, f.name)
            for f in fields(self)
            if f.name != "extra" and getattr(override, f.name) is not None
        }
        merged = replace(self, **changes)
        merged.extra = {**self.extra, **override.extra}
        return merged


_INF = "INFINITE"


def _plain(value):
    if isinstance(value, float) and value == float("inf"):
        return _INF
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def spec_to_dict(spec: JobSpec) -> dict:
    """A JSON-able dict of the options that were set (what sbatch sends to the controller)."""
    out: dict = {}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if value is None or (f.name == "extra" and not value):
            continue
        if f.name == "gres":
            value = [[g.name, g.type, g.count] for g in value]
        elif f.name == "array":
            value = {"indices": list(value.indices), "max_running": value.max_running, "text": value.text}
        elif f.name == "signal":
            value = [value.signal, value.seconds, value.batch_only, value.reservation]
        elif f.name == "dependency":
            value = {"terms": [[kind, list(ids)] for kind, ids in value.terms], "any_of": value.any_of}
        out[f.name] = _plain(value)
    return out


_TIMES = ("time_limit_min", "time_min_min")  # the only fields that may be INFINITE


def spec_from_dict(data: dict) -> JobSpec:
    """The inverse of :func:`spec_to_dict`; unknown keys are an error (a client bug).

    The controller's API has checked ``data`` against its schema (minislurm.ctld.schema), so
    this only rebuilds the tuples and records; it cannot fail on a valid request."""
    spec = JobSpec()
    names = {f.name for f in fields(JobSpec)}
    for key, value in data.items():
        if key not in names:
            raise ValueError(f"unknown job option '{key}'")
        if value is None:  # not given: the default
            continue
        if key in _TIMES and value == _INF:
            value = float("inf")
        elif key == "gres":
            value = tuple(GresRequest(n, t, int(c)) for n, t, c in value)
        elif key == "array":
            value = ArraySpec(tuple(value["indices"]), value.get("max_running"), value.get("text", ""))
        elif key == "signal":
            value = SignalSpec(*value)
        elif key == "dependency":
            value = Dependency(tuple((k, tuple(ids)) for k, ids in value["terms"]), value.get("any_of", False))
        elif key in ("gpus", "gpus_per_node", "gpus_per_task", "nodelist", "exclude"):
            value = tuple(value)
        setattr(spec, key, value)
    return spec
