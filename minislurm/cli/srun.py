"""srun: run a parallel step, inside an allocation or in a new one.

Inside a job (``SLURM_JOB_ID`` set) srun asks the controller for a step on the job's nodes and
GPUs.  Outside one it first asks for an allocation and waits for it (``srun: job N queued and
waiting for resources``; :mod:`.allocation`).  It then starts the tasks and relays their output
(:mod:`.launch`); its exit code is the largest task exit code.

Every task reads srun's stdin (``echo hi | srun -n2 cat`` prints hi twice; ``--input=N`` or
``--input=none`` narrows that), and ``srun --pty bash`` gives task 0 a pseudo-terminal: an
interactive shell on the node, its keys typed through srun's terminal (:mod:`.stepinput`).
Not modelled: per-task input files (``--input=%t.in``), SLURM_PTY_PORT, and a window size
that follows srun's terminal after it starts (it is passed once).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from minislurm.cli.jobhelp import early_answer
from minislurm.cli.allocation import allocate, call_until_heard, existing_allocation, keep_alive, release
from minislurm.cli.launch import run_step
from minislurm.cli.stepinput import input_source, pty_refused, window_size
from minislurm.client import Client, ClientError, umask_text
from minislurm.core.options import combine, env_options, parse_options
from minislurm.core.optvalues import OptionError


def main(argv: list[str]) -> int:
    if (answered := early_answer("srun", argv)) is not None:  # --help, --usage, --version
        return answered
    now = time.time()
    try:
        cli, rest = parse_options(argv, prog="srun", now=now)
        env_spec = env_options(os.environ, prog="srun", now=now)
        spec = combine(None, env_spec, cli, prog="srun")
    except OptionError as exc:
        print(exc.text, file=sys.stderr)
        return exc.exit_code
    if not rest:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    try:
        stdin = input_source(spec.input)
    except OSError as exc:
        print(f"srun: error: Could not open stdin file: {exc.strerror}", file=sys.stderr)
        return 1
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
        gpus = None
        gres = [g for g in spec.gres or () if g.name == "gpu"]
        if cli.gres or cli.gpus_per_node:
            gpus = gres[0].count if gres else spec.gpus_per_node[1]
        step = client.call("POST", f"/jobs/{job_id}/steps", {
            "ntasks": spec.ntasks, "nodes": spec.nodes_min if (cli.nodes_min or not inside) else None,
            "ntasks_per_node": spec.ntasks_per_node, "cpus_per_task": spec.cpus_per_task,
            "gpus_per_node": gpus, "nodelist": list(spec.nodelist) if spec.nodelist else None,
            "name": cli.job_name or os.path.basename(rest[0]), "overcommit": "overcommit" in spec.extra})
    except ClientError as exc:
        what = f"Unable to create step for job {inside}" if inside else "Unable to allocate resources"
        message = str(exc)
        print(f"srun: error: {message if message.startswith(what) else f'{what}: {message}'}", file=sys.stderr)
        if own_allocation:
            release(client, own_allocation, 1)
        return 1
    env = dict(os.environ)
    env.setdefault("SLURM_UMASK", umask_text())
    if pty:
        env.update(SLURM_PTY_WIN_ROW=str(pty[0]), SLURM_PTY_WIN_COL=str(pty[1]))
    cwd = os.path.abspath(spec.chdir) if spec.chdir else os.getcwd()
    gpt = spec.gpus_per_task[1] if spec.gpus_per_task else None
    if own_allocation:
        threading.Thread(target=keep_alive, args=(own_allocation,), daemon=True).start()
    used: dict = {}
    code = run_step(step, rest, env, cwd, label="label" in spec.extra,
                    unbuffered="unbuffered" in spec.extra, gpus_per_task=gpt,
                    quit_on_intr="quit-on-interrupt" in spec.extra, usage=used, stdin=stdin, pty=pty)
    call_until_heard(client, f"/jobs/{job_id}/steps/{step['step_id']}/complete",
                      {"exit_code": min(code, 255) if code < 128 else 0, "signal": code - 128 if code > 128 else 0,
                       "usage": used or None})
    if own_allocation:
        release(client, own_allocation, code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
