"""What each sbatch/srun option does to the job spec: one handler per option (:data:`HANDLERS`),
built from the value converters of :mod:`minislurm.core.optvalues`; :mod:`minislurm.core.options`
calls them in the order the options were given.
"""

from __future__ import annotations

from collections.abc import Callable

from minislurm.core import errors, hostlist, timefmt
from minislurm.core.arrays import INVALID_ARRAY, parse_array
from minislurm.core.deps import parse_dependency
from minislurm.core.optvalues import (MAX_ARRAY_INDEX_LIMIT, OptionError, error, parse_gpus, parse_gres, parse_int,
                                      parse_mem, parse_nodes, parse_signal, rejected, strtol)
from minislurm.core.spec import JobSpec


Handler = Callable[[JobSpec, "str | None", str, float], None]


def _store(field: str, convert: Callable[[str], object], fail: Callable[[str, str], OptionError]) -> Handler:
    """A handler storing ``convert(value)``; its ValueError becomes ``fail(prog, str(exc))``."""
    def handle(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
        try:
            setattr(spec, field, convert(value or ""))
        except OptionError:
            raise
        except ValueError as exc:
            raise fail(prog, str(exc)) from None
    return handle


def _yes_no(text: str) -> bool:
    if text.lower() not in ("yes", "no"):
        raise ValueError(text)
    return text.lower() == "yes"


def _say(message: str, code: int = 255) -> Callable[[str, str], OptionError]:
    return lambda prog, _: error(prog, message, code)


def _text(field: str) -> Handler:
    return lambda spec, value, prog, now: setattr(spec, field, value or "")


def _file(field: str) -> Handler:
    """``-o/-e/-i``; ``none`` means /dev/null, as Slurm rewrites it."""
    def handle(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
        setattr(spec, field, "/dev/null" if (value or "").lower() == "none" else value or "")
    return handle


def _mem(field: str, option: str) -> Handler:
    def convert(text: str) -> int:
        mb = parse_mem(text)
        if mb is None:
            raise ValueError
        return mb
    return _store(field, convert, _say(f"Invalid {option} specification"))


def _gpu(field: str) -> Handler:
    inner = _store(field, parse_gpus, _say(errors.INVALID_GRES, 1))

    def handle(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
        inner(spec, value, prog, now)
        if "," in (value or ""):  # minislurm keeps the first [type:]N; the list is recorded
            spec.extra[field.replace("_", "-")] = value or ""
    return handle


def _count(field: str, option: str) -> Handler:
    return lambda spec, value, prog, now: setattr(spec, field, parse_int(option, value or "", prog))


def _jobid(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    """srun ``--jobid`` (and ``SLURM_JOB_ID``): the allocation to run in, a positive number."""
    spec.extra["jobid"] = str(parse_int("--jobid", value or "", prog))


def _const(field: str, constant: object) -> Handler:
    return lambda spec, value, prog, now: setattr(spec, field, constant)


def _nodes(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    spec.nodes_min, spec.nodes_max = parse_nodes(value or "", prog)


def _gres(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    if (value or "").lower() in ("help", "list"):
        spec.extra["gres"] = "help"  # real sbatch prints the configured GRES and exits
        return
    _store("gres", parse_gres, _say(errors.INVALID_GRES, 1))(spec, value, prog, now)


def _nodelist(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    if "/" in (value or ""):  # Slurm reads a name with a "/" as a host file
        spec.extra["nodefile"] = value or ""
        return
    _store("nodelist", lambda t: tuple(hostlist.expand(t)),
           _say("Invalid node list specified", 1))(spec, value, prog, now)


def _exclusive(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    mode = (value or "exclusive").lower()
    if mode not in ("exclusive", "oversubscribe", "user", "mcs", "topo"):
        raise error(prog, "Invalid --exclusive specification")
    spec.exclusive = mode != "oversubscribe"
    if mode in ("user", "mcs", "topo"):
        spec.extra["exclusive"] = mode


def _nice(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    nice = 100 if value is None else (strtol(value)[0] or 0)  # strtoll: junk reads as 0
    if abs(nice) > 2147483645:
        raise error(prog, "Invalid --nice value, out of range (+/- 2147483645)")
    spec.nice = nice


def _open_mode(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    first = (value or " ")[0].lower()  # Slurm reads only the first letter
    if first not in ("a", "t"):
        raise error(prog, "Invalid --open-mode specification")
    spec.open_mode = "append" if first == "a" else "truncate"


def _begin(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    _store("begin", lambda t: timefmt.parse_begin(t, now),
           _say("Invalid --begin specification"))(spec, value, prog, now)


def _reset(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    """A flag variable with a false value clears its option (environment only)."""
    fields = {"requeue": "requeue", "no-requeue": "requeue", "hold": "hold", "wait": "wait",
              "parsable": "parsable", "test-only": "test_only", "oversubscribe": "exclusive"}
    if value in fields:
        setattr(spec, fields[value], None)
    else:
        spec.extra.pop(value or "", None)


def _num_list(text: str, hex_: bool) -> str | None:
    """Why a map_gpu/mask_gpu list is bad (a message to print first, or ``""``); None if good."""
    digits = "0123456789abcdefABCDEF" if hex_ else "0123456789"
    for tok in filter(None, text.split(",")):
        body = tok[2:] if hex_ and tok.startswith("0x") else tok
        for ch in body:
            if ch not in digits and ch != "*":
                return f"Failed to validate {body}, offending character is {ch}"
        count, _, times = body.partition("*")
        if not count or ("*" in body and not times.isdigit()):
            return ""
    return None


def gpu_bind_problem(text: str) -> str | None:
    """22.05's check of a GPU binding (tres_bind.c): None when good, else a line to print
    before the refusal (often empty).  Only the first letter of closest and none is read."""
    low = text.lower()
    if low.startswith("verbose,"):
        text, low = text[8:], low[8:]
    if low[:1] in ("c", "n"):
        return None
    for word, hex_ in (("map_gpu:", False), ("mask_gpu:", True)):
        if low.startswith(word):
            return _num_list(text[len(word):], hex_)
    for word in ("per_task:", "single:"):
        if low.startswith(word):
            value, _ = strtol(text[len(word):] or "0")
            return None if value is not None and 0 <= value < 2**63 - 1 else ""
    return ""


def _bind(option: str, tres: bool) -> Handler:
    """``--gpu-bind=B`` (checked as ``gpu:B``) and ``--tres-bind=gpu:B[;gpu:B]``, refused as
    sbatch 22.05 refuses a bad GPU binding; the value is recorded."""
    def handle(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
        value = value or ""
        parts = value.split(";") if tres else [f"gpu:{value}"]
        for part in filter(None, parts):
            kind, sep, rest = part.partition(":")
            problem = gpu_bind_problem(rest) if sep and kind == "gpu" else ""
            if problem is not None:
                lead = f"{prog}: error: {problem}\n" if problem else ""
                raise OptionError(f"{lead}{prog}: error: Invalid {option} argument: "
                                  f"{value if tres else 'gpu:' + value}")
        spec.extra[option[2:]] = value
    return handle


def _mincpus(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    spec.extra["mincpus"] = str(parse_int("--mincpus", value or "", prog))


def _tmp(spec: JobSpec, value: str | None, prog: str, now: float) -> None:
    if parse_mem(value or "") is None:
        raise error(prog, "Invalid --tmp specification")
    spec.extra["tmp"] = value or ""


HANDLERS: dict[str, Handler] = {
    "account": _text("account"), "chdir": _text("chdir"), "comment": _text("comment"),
    "export": _text("export"), "job-name": _text("job_name"), "partition": _text("partition"),
    "reservation": _text("reservation"), "wrap": _text("wrap"),
    "error": _file("error"), "input": _file("input"), "output": _file("output"),
    "array": _store("array", lambda t: parse_array(t, MAX_ARRAY_INDEX_LIMIT),
                    lambda prog, _: rejected(prog, INVALID_ARRAY)),
    "dependency": _store("dependency", parse_dependency,
                         lambda prog, _: rejected(prog, errors.DEPENDENCY)),
    "exclude": _store("exclude", lambda t: tuple(hostlist.expand(t)),
                      lambda prog, _: rejected(prog, errors.INVALID_NODE_NAME)),
    "begin": _begin,
    "signal": _store("signal", parse_signal, _say("Invalid --signal specification")),
    "time": _store("time_limit_min", timefmt.parse_time_limit, _say("Invalid --time specification")),
    "time-min": _store("time_min_min", timefmt.parse_time_limit,
                       _say("Invalid --time-min specification")),
    "mem": _mem("mem_mb", "--mem"), "mem-per-cpu": _mem("mem_per_cpu_mb", "--mem-per-cpu"),
    "gpus": _gpu("gpus"), "gpus-per-node": _gpu("gpus_per_node"),
    "gpus-per-task": _gpu("gpus_per_task"), "gres": _gres,
    "cpus-per-task": _count("cpus_per_task", "--cpus-per-task"),
    "ntasks": _count("ntasks", "--ntasks"),
    "ntasks-per-node": _count("ntasks_per_node", "--ntasks-per-node"), "nodes": _nodes,
    "nodelist": _nodelist, "jobid": _jobid, "exclusive": _exclusive, "nice": _nice, "open-mode": _open_mode,
    "hold": _const("hold", True), "requeue": _const("requeue", True),
    "no-requeue": _const("requeue", False), "oversubscribe": _const("exclusive", False),
    "parsable": _const("parsable", True), "test-only": _const("test_only", True),
    "wait": _const("wait", True), "reset": _reset,
    "mincpus": _mincpus, "tmp": _tmp, "gpu-bind": _bind("--gpu-bind", False), "tres-bind": _bind("--tres-bind", True),
    "kill-on-invalid-dep": _store("kill_on_invalid_dep", lambda t: _yes_no(t),
                                  _say("Invalid --kill-on-invalid-dep specification")),
}
