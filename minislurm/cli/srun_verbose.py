"""What ``srun -v`` says, in the form srun 22.05 says it (recorded on the twin, session
``srun_verbose``): the options it was given (by command line or input variable) in its own
order, then the allocation, the launch on each node, each node's tasks starting and each
group of tasks ending.  With ``-vv`` also the resource limits it propagates.  Only these lines
of srun's are modelled: its many ``debug:`` lines about its own threads and sockets are not.
"""

from __future__ import annotations

import os
import sys

from minislurm.core import rlimits
from minislurm.core.timefmt import format_elapsed, format_timestamp

RULE = "-------------------- --------------------"
# srun lists the options in its table's order, which is by name but for these three.
_PLACE = {"alloc-nodelist": "acctg-freq~", "jobid": "job-", "threads": "mail-user~"}
_SHOWN_AS = {"alloc-nodelist": "(null)"}
_FILES = ("input", "output", "error")


def say(text: str) -> None:
    print(f"srun: {text}", file=sys.stderr)


def _value(name: str, value: str | None, spec) -> str:
    """An option's value as srun shows it: what was typed, but for the kinds below."""
    if name in ("time", "time-min"):
        minutes = spec.time_limit_min if name == "time" else spec.time_min_min
        return "UNLIMITED" if minutes is None or minutes == float("inf") else format_elapsed(minutes * 60)
    if name == "begin":
        return format_timestamp(spec.begin)
    if name == "verbose":
        return str(spec.extra.get("verbose") or 1)
    if name == "cpu-bind":
        return "(null)"  # task/none: the binding asked for is dropped (see cpu_binding_line)
    if name == "kill-on-bad-exit":
        return "1" if value in (None, "") else value
    if name in ("exclusive", "oversubscribe"):
        return "oversubscribe" if spec.exclusive is False else (value or "exclusive")
    if name == "open-mode":
        return (value or "t")[:1].lower()
    if name == "gres" and value and not value.startswith("gres:"):
        return f"gres:{value}"
    if name in _FILES and value == "none":
        return "/dev/null"
    return "set" if value is None else value


def defined_options(env_pairs, cli_pairs, spec) -> list[str]:
    """The block srun -v starts with: each option set, the command line's value over the
    environment's; an input variable that clears a flag takes it out."""
    given: dict[str, str | None] = {}
    for opt, value in [*env_pairs, *cli_pairs]:
        if opt.key == "reset":
            given.pop(value, None)
        else:
            given[opt.name] = value
    lines = ["defined options", RULE]
    for name in sorted(given, key=lambda n: _PLACE.get(n, n)):
        lines.append(f"{_SHOWN_AS.get(name, name):<20}: {_value(name, given[name], spec)}")
    return lines + [RULE, "end of defined options"]


def propagated(environment: dict[str, str]) -> list[str]:
    """``-vv``: the limits and variables srun passes on, in its order."""
    order = ("CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS", "NPROC", "NOFILE", "MEMLOCK", "AS")
    lines = [f"debug:  propagating RLIMIT_{name}={environment[rlimits.PREFIX + name].lstrip('U')}"
             for name in order if rlimits.PREFIX + name in environment]
    lines.append(f"debug:  propagating SLURM_PRIO_PROCESS={os.getpriority(os.PRIO_PROCESS, 0)}")
    return lines + [f"debug:  propagating UMASK={environment.get('SLURM_UMASK', '0022')}"]


def counts(values: list[int]) -> str:
    """``2(x1),1(x1)``: srun's run-length form, every run with its count."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return ",".join(f"{v}(x{n})" for v, n in runs)


def task_list(tasks: list[int]) -> str:
    """``0`` for one task, else ``[0-1]`` or ``[0,2]``."""
    from minislurm.cli.launch import _ranges
    return str(tasks[0]) if len(tasks) == 1 else f"[{_ranges(tasks)}]"


def launch_lines(step: dict, cpu_bind: str | None) -> list[str]:
    """From the allocation to the request to each node."""
    from minislurm.core.hostlist import compress
    job, name = step["job"], f"StepId={step['job']['job_id']}.{step['step_id']}"
    lines = [f"jobid {job['job_id']}: nodes({len(job['nodes'])}):`{compress(job['nodes'])}', "
             f"cpu counts: {counts(job['cpus_per_node'])}",
             f"launch/slurm: launch_p_step_launch: CpuBindType={cpu_bind or '(null type)'}"]
    for node, tasks in zip(step["nodes"], step["task_ids"]):
        lines.append(f"launching {name} on host {node}, {len(tasks)} tasks: {task_list(tasks)}")
    return lines + ["route/default: init: route default plugin loaded"]


def cpu_binding_line(spec) -> str | None:
    """A ``--cpu-bind`` on a cluster without task/affinity (minislurm's, the twin's)."""
    return "cluster configuration lacks support for cpu binding" if spec.extra.get("cpu-bind") is not None else None

