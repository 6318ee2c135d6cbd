"""srun's heterogeneous steps: ``srun A : B`` and ``srun --het-group=N`` inside a heterogeneous job.

Each group of options and its command (between ``:`` words) runs in one component of the job
(the Nth group in component N, unless ``--het-group`` names others: ``1``, ``0,1``, ``0-1``;
each component at most once in one srun), as one step: one step id, and one rank space over
the components in their order, whatever the order given (component 0's tasks are 0..n-1, the
next one's follow), as Slurm 22.05 numbers them, so an MPI or torchrun world spans them all.
Each group keeps its own command, ``--export`` and ``-o/-e`` files; ``-l`` applies to all.

Not modelled: allocating a heterogeneous job with srun itself (outside a job it is refused).
"""

from __future__ import annotations

import os
import re
import sys
import time

from minislurm.cli.launch import run_step
from minislurm.cli.srun import Unopened, step_files, task_scripts
from minislurm.client import Client, ClientError, umask_text
from minislurm.core import errors, rlimits
from minislurm.core.options import combine, env_options, exported, parse_options
from minislurm.core.optvalues import OptionError
from minislurm.core.spec import JobSpec


def split_groups(argv: list[str]) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for word in argv:
        if word == ":":
            groups.append([])
        else:
            groups[-1].append(word)
    return groups


MAX_GROUPS = 128  # the most components a step may name (the API's limit)


def het_groups(value: str) -> list[int]:
    """The components ``--het-group`` names, in order, each once: numbers and ranges, comma
    separated.  A range is cut short where it could name only components that do not exist
    (past MAX_GROUPS), its end kept so the controller can say it is too high."""
    named: set[int] = set()
    for item in value.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?", item)
        if m is None or (m[2] is not None and int(m[2]) < int(m[1])):
            raise OptionError(f"srun: error: _parse_single_range: Invalid range: `{item}'\n"
                              f"srun: error: Invalid --het-group value: {value}", 1)
        first, last = int(m[1]), int(m[2] or m[1])
        named.update(range(first, min(last, first + MAX_GROUPS) + 1), (last,))
    out = sorted(named)
    return out if len(out) <= MAX_GROUPS else [*out[:MAX_GROUPS - 1], out[-1]]


def _groups(argv: list[str], now: float) -> list[tuple[int, JobSpec, list[str]]]:
    """(het group, options, command) per component named, in component order; a group of
    options without a command runs the next one's."""
    env_spec = env_options(os.environ, prog="srun", now=now)
    out = []
    for i, words in enumerate(split_groups(argv)):
        cli, rest = parse_options(words, prog="srun", now=now)
        spec = combine(None, env_spec if i == 0 else JobSpec(), cli, prog="srun")
        if cli.job_name is None:  # a step is named by its command unless -J is given here
            spec.job_name = None
        out.append([het_groups(cli.extra["het-group"]) if "het-group" in cli.extra else [i], spec, rest])
    for i in range(len(out) - 2, -1, -1):
        out[i][2] = out[i][2] or out[i + 1][2]
    named = [g for groups, _, _ in out for g in groups]
    if len(named) != len(set(named)):
        raise OptionError("srun: fatal: Duplicate het groups in single srun not supported", 1)
    return sorted(((g, spec, rest) for groups, spec, rest in out for g in groups), key=lambda group: group[0])


def main(argv: list[str]) -> int:
    try:
        groups = _groups(argv, time.time())
    except OptionError as exc:
        print(exc.text, file=sys.stderr)
        return exc.exit_code
    if not groups[-1][2]:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    inside = groups[0][1].extra.get("jobid") or os.environ.get("SLURM_JOB_ID")
    if not inside:  # allocating one is not modelled: refused, never run with one component
        print(f"srun: error: {errors.HETJOB_UNSUPPORTED}", file=sys.stderr)
        return 1
    client = Client()
    job_id = int(inside)
    try:
        step = client.call("POST", f"/jobs/{job_id}/steps", {"het": [{
            "group": group, "ntasks": spec.ntasks, "nodes": spec.nodes_min,
            "ntasks_per_node": spec.ntasks_per_node, "cpus_per_task": spec.cpus_per_task,
            "nodelist": list(spec.nodelist) if spec.nodelist else None,
            "name": spec.job_name or os.path.basename(rest[0]), "overcommit": "overcommit" in spec.extra}
            for group, spec, rest in groups]})
    except ClientError as exc:
        what = f"Unable to create step for job {job_id}"
        message = str(exc)
        plain = message.startswith((what, errors.HET_GROUP_BEYOND, errors.HET_GROUP_ABOVE))
        print(f"srun: error: {message if plain else f'{what}: {message}'}", file=sys.stderr)
        return 1
    parts, opened, streams = [], [], {}
    code = 0
    try:
        for (group, spec, rest), part in zip(groups, step["parts"]):
            env = exported(os.environ, spec.export)
            env.setdefault("SLURM_UMASK", umask_text())
            env.update(rlimits.submit_env(spec.extra.get("propagate")))
            cwd = os.path.abspath(spec.chdir) if spec.chdir else os.getcwd()
            own_streams, files, files_opened = step_files(spec, part, cwd)
            opened += files_opened
            streams[tuple(t for ids in part["task_ids"] for t in ids)] = own_streams
            parts.append((part, {"argv": rest, "environment": env, "cwd": cwd, **files, **task_scripts(spec),
                                 "gpus_per_task": spec.gpus_per_task[1] if spec.gpus_per_task else None}))
    except Unopened as exc:
        print(f"srun: error: {exc}", file=sys.stderr)
        code = 1
    else:
        label = any("label" in spec.extra for _, spec, _ in groups)
        code = run_step(step, groups[0][2], parts[0][1]["environment"], parts[0][1]["cwd"], label=label,
                        unbuffered=any("unbuffered" in spec.extra for _, spec, _ in groups),
                        gpus_per_task=None, parts=parts, routes=streams)
    finally:
        for f in opened:
            f.close()
    for part in step["parts"]:
        try:
            client.call("POST", f"/jobs/{part['job']['job_id']}/steps/{step['step_id']}/complete",
                        {"exit_code": min(code, 255) if code < 128 else 0,
                         "signal": code - 128 if code > 128 else 0, "usage": None})
        except ClientError:
            pass
    return code
