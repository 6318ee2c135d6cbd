"""srun: run a parallel step, inside an allocation or in a new one.

Inside a job (``SLURM_JOB_ID`` set) srun asks the controller for a step on the job's nodes and
GPUs.  Outside one it first asks for an allocation and waits for it (``srun: job N queued and
waiting for resources``; :mod:`.allocation`).  It then starts the tasks and relays their output
(:mod:`.launch`); its exit code is the largest task exit code.

Every task reads srun's stdin (``echo hi | srun -n2 cat`` prints hi twice; ``--input=N`` or
``--input=none`` narrows that), and ``srun --pty bash`` gives task 0 a pseudo-terminal: an
interactive shell on the node, its keys typed through srun's terminal (:mod:`.stepinput`).
``-o/-e/-i`` with a ``%t``, ``%n`` or ``%N`` pattern are files per task or node, opened on the
nodes by the job's user; any other name is one file that srun opens (:func:`step_files`).
Not modelled: SLURM_PTY_PORT, and a window size that follows srun's terminal after it starts
(it is passed once).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import asdict

from minislurm.cli.jobhelp import early_answer
from minislurm.cli.allocation import (allocate, call_until_heard, existing_allocation, immediate_seconds,
                                      keep_alive, release)
from minislurm.cli import srun_verbose
from minislurm.cli.launch import run_step
from minislurm.cli.stepinput import input_source, pty_refused, window_size
from minislurm.client import Client, ClientError, umask_text
from minislurm.core import errors, rlimits
from minislurm.core.options import combine, env_options, env_pairs, exported, parse_options, split_options
from minislurm.core.optvalues import OptionError
from minislurm.core.patterns import expand_pattern, step_io
from minislurm.core.stepfit import StepRequest

STEP_WAIT = 60.0  # seconds a step request waits in the controller for a step of its job to end


def main(argv: list[str]) -> int:
    if (answered := early_answer("srun", argv)) is not None:  # --help, --usage, --version
        return answered
    now = time.time()
    try:
        pairs, _ = split_options(argv, prog="srun")
        cli, rest = parse_options(argv, prog="srun", now=now)
        if ":" in rest or "het-group" in cli.extra:  # a step over a heterogeneous job's components
            from minislurm.cli import srun_het
            return srun_het.main(argv)
        env_spec = env_options(os.environ, prog="srun", now=now)
        spec = combine(None, env_spec, cli, prog="srun")
    except OptionError as exc:
        print(exc.text, file=sys.stderr)
        return exc.exit_code
    if not rest:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    if refused := rlimits.refusal(spec.extra.get("propagate"), "srun"):
        print(refused, file=sys.stderr)
        return 1
    try:
        stdin = input_source(spec.input)
    except OSError as exc:
        print(f"srun: error: Could not open stdin file: {exc.strerror}", file=sys.stderr)
        return 1
    verbose = int(spec.extra.get("verbose") or 0)
    if verbose:
        if line := srun_verbose.cpu_binding_line(spec):
            srun_verbose.say(line)
        for line in srun_verbose.defined_options(env_pairs(os.environ, "srun"), pairs, spec):
            srun_verbose.say(line)
    pty = window_size() if "pty" in spec.extra else None
    if "pty" in spec.extra and pty is None:
        pty_refused()
    client = Client()
    inside = spec.extra.get("jobid") or os.environ.get("SLURM_JOB_ID")
    own_allocation = None
    if inside and not existing_allocation(client, int(inside), cli.nodes_min):
        return 1
    try:
        if inside:
            job_id = int(inside)
        else:
            job_id = own_allocation = allocate(client, spec, rest)
        request = {**asdict(StepRequest.from_options(spec, cli, inside=bool(inside))),
                   "name": cli.job_name or os.path.basename(rest[0])}
        step = create_step(client, job_id, request, immediate_seconds(spec))
    except ClientError as exc:
        what = f"Unable to create step for job {inside}" if inside else "Unable to allocate resources"
        *notes, message = str(exc).splitlines() or [""]
        for line in [*notes, message if message.startswith(what) else f"{what}: {message}"]:
            print(f"srun: error: {line}", file=sys.stderr)
        if own_allocation:
            release(client, own_allocation, 1)
        return 1
    env = exported(os.environ, spec.export)  # what the tasks get of srun's environment
    env.setdefault("SLURM_UMASK", umask_text())
    env.update(rlimits.submit_env(spec.extra.get("propagate")))
    if verbose > 1:
        for line in srun_verbose.propagated(env):
            srun_verbose.say(line)
    if pty:
        env.update(SLURM_PTY_WIN_ROW=str(pty[0]), SLURM_PTY_WIN_COL=str(pty[1]))
    cwd = os.path.abspath(spec.chdir) if spec.chdir else os.getcwd()
    gpt = spec.gpus_per_task[1] if spec.gpus_per_task else None
    if own_allocation:
        threading.Thread(target=keep_alive, args=(own_allocation,), daemon=True).start()
    used: dict = {}
    try:
        streams, files, opened = step_files(spec, step, cwd)
        if "stdin_path" in files:
            path = files.pop("stdin_path")
            try:
                stdin = input_source(path)
            except OSError as exc:
                raise Unopened("stdin", path, exc.strerror) from None
    except Unopened as exc:
        print(f"srun: error: {exc}", file=sys.stderr)
        code = 1
    else:
        if verbose:
            for line in srun_verbose.launch_lines(step, spec.extra.get("cpu-bind")):
                srun_verbose.say(line)
        try:
            code = run_step(step, rest, env, cwd, label="label" in spec.extra,
                            unbuffered="unbuffered" in spec.extra, gpus_per_task=gpt,
                            quit_on_intr="quit-on-interrupt" in spec.extra, usage=used, stdin=stdin, pty=pty,
                            streams=streams, files=files, task_scripts=task_scripts(spec), verbose=bool(verbose),
                            own_allocation=bool(own_allocation))
        finally:
            for f in opened:
                f.close()
    call_until_heard(client, f"/jobs/{job_id}/steps/{step['step_id']}/complete",
                      {"exit_code": min(code, 255) if code < 128 else 0, "signal": code - 128 if code > 128 else 0,
                       "usage": used or None})
    if own_allocation:
        release(client, own_allocation, code)
    return code


def create_step(client: Client, job_id: int, request: dict, immediate: float | None) -> dict:
    """Ask for the step until the controller gives it.  While running steps hold what it needs,
    each request waits in the controller (a pending step) until one of them ends, then is
    refused: srun says so and asks again, as 22.05's does (its wait is SlurmctldTimeout plus
    up to 9 s, 60 to 300 s, when nothing wakes it).  With ``--immediate`` it stops asking after
    that many seconds and fails with Slurm's ``Requested nodes are busy``."""
    started, asked = time.monotonic(), 0
    while True:
        left = STEP_WAIT if immediate is None else immediate - (time.monotonic() - started)
        wait = max(0.05, min(STEP_WAIT, left))
        try:
            step = client.call("POST", f"/jobs/{job_id}/steps", {**request, "wait": wait}, timeout=wait + 60)
        except ClientError as exc:
            if not str(exc).endswith(errors.NODES_BUSY) or (
                    immediate is not None and time.monotonic() - started >= immediate):
                raise
            state = "temporarily" if not asked else "still"
            print(f"srun: Job {job_id} step creation {state} disabled, retrying ({errors.NODES_BUSY})",
                  file=sys.stderr)
            asked += 1
            continue
        if asked:
            print(f"srun: Step created for job {job_id}", file=sys.stderr)
        return step


def task_scripts(spec) -> dict:
    """``--task-prolog``/``--task-epilog`` (or SLURM_TASK_PROLOG/EPILOG), for every task on the
    nodes, as given: the nodes refuse a name that is not a full path, as slurmstepd does."""
    return {f"task_{kind}": spec.extra[f"task-{kind}"] for kind in ("prolog", "epilog")
            if spec.extra.get(f"task-{kind}")}


class Unopened(Exception):
    def __init__(self, what: str, path: str, why: str):
        super().__init__(f"Could not open {what} file: {why}")  # as for -i FILE (checked on the twin)
        self.path = path


def step_files(spec, step: dict, cwd: str) -> tuple[dict, dict, list]:
    """Where ``-o/-e/-i`` send the step's streams, as Slurm's srun decides: a name with ``%t``,
    ``%n`` or ``%N`` is a file per task or node, opened on the nodes (``files``, for the agents);
    any other name is one file, which srun opens and writes what it relays into (``streams``);
    a number shows one task's stream only; ``none`` is /dev/null.  ``-e`` not given follows
    ``-o``.  Returns (streams for :class:`~minislurm.cli.launch.Relay`, files, srun's open files);
    :class:`Unopened` if srun cannot open one."""
    job = step["job"]
    error = spec.error or spec.output

    def local(pattern: str) -> str:
        name = expand_pattern(pattern, job_id=job["job_id"], job_name=job.get("name", ""), user=job["user"],
                              array_job_id=job.get("array_job_id"), array_task_id=job.get("array_task_id"),
                              node=step["nodes"][0], step_id=step["step_id"],
                              restart_count=job.get("restart_count", 0))
        return os.path.join(cwd, name)

    streams: dict = {"only": (None, None)}
    files: dict = {}
    opened: dict[str, object] = {}
    mode = "a" if spec.open_mode == "append" else "w"
    for key, what, value in (("out", "stdout", spec.output), ("err", "stderr", error)):
        kind = step_io(value)
        if kind in ("none", "tasks"):
            files[f"{'output' if key == 'out' else 'error'}_file"] = value
        elif kind == "task":
            only = list(streams["only"])
            only[key == "err"] = int(value)
            streams["only"] = tuple(only)
        elif kind == "file":
            path = local(value)
            if path not in opened:
                try:
                    opened[path] = open(path, mode, encoding="utf-8", errors="replace")
                except OSError as exc:
                    for f in opened.values():
                        f.close()
                    raise Unopened(what, path, exc.strerror) from None
            streams[key] = opened[path]
    if step_io(spec.input) == "tasks":
        files["input_file"] = spec.input
    elif step_io(spec.input) == "file" and "%" in spec.input:
        files["stdin_path"] = local(spec.input)
    if files.get("output_file") or files.get("error_file") or files.get("input_file"):
        files["open_mode"] = spec.open_mode or "truncate"
    return streams, files, list(opened.values())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
