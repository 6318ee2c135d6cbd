"""``minislurm <command>``: the entry point.  Imports stay inside the commands so each starts fast."""

from __future__ import annotations

import sys

COMMANDS = {
    "cluster": ("minislurm.cli.cluster", "start, inspect or stop a local cluster (up, status, down)"),
    "env": ("minislurm.cli.env", "print shell lines that put sbatch, squeue, ... on PATH"),
    "sbatch": ("minislurm.cli.sbatch", "submit a batch script"),
    "srun": ("minislurm.cli.srun", "run a parallel step"),
    "salloc": ("minislurm.cli.salloc", "get an allocation and run a shell or command in it"),
    "squeue": ("minislurm.cli.squeue", "view the queue"),
    "scancel": ("minislurm.cli.scancel", "cancel or signal jobs"),
    "sinfo": ("minislurm.cli.sinfo", "view nodes and partitions"),
    "sacct": ("minislurm.cli.sacct", "view accounting records"),
    "sstat": ("minislurm.cli.sstat", "view what a running job's steps use (CPU, memory)"),
    "seff": ("minislurm.cli.seff", "a finished job's CPU and memory efficiency"),
    "jobstats": ("minislurm.cli.jobstats", "a job's use of CPU, memory, time and GPUs per node and task"),
    "scontrol": ("minislurm.cli.scontrol", "view and change jobs, nodes, reservations"),
    "sprio": ("minislurm.cli.sprio", "view the priority factors of pending jobs"),
    "sshare": ("minislurm.cli.sshare", "view fair-share usage"),
    "sdiag": ("minislurm.cli.sdiag", "view the controller's job, scheduling and RPC statistics"),
    "sacctmgr": ("minislurm.cli.sacctmgr", "view and (operators) change users, accounts, associations"),
    "why": ("minislurm.cli.why", "why a job waits, from the scheduler's plan, with what-ifs"),
    "dashboard": ("minislurm.cli.dashboard", "print the link to the cluster's live dashboard"),
    "sim": ("minislurm.cli.sim", "replay a workload trace in the simulator"),
    "demo": ("minislurm.cli.demo", "the guided tour (README's main command)"),
    "grade": ("minislurm.cli.grade", "otter-grader for the labs: student versions, grades.csv"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: minislurm <command> [options]\n\ncommands:")
        for name, (_, text) in COMMANDS.items():
            print(f"  {name:<8} {text}")
        return 0 if argv else 1
    if argv[0] in ("-V", "--version"):
        from minislurm import __version__
        print(f"minislurm {__version__}")
        return 0
    entry = COMMANDS.get(argv[0])
    if entry is None:
        print(f"minislurm: error: unknown command '{argv[0]}' (try 'minislurm --help')", file=sys.stderr)
        return 1
    _bytes_out_as_typed()
    import importlib
    return importlib.import_module(entry[0]).main(argv[1:])


def _bytes_out_as_typed() -> None:
    """A word that is not UTF-8 (``scontrol show hostnames $'gpu\\xff'``) reaches Python as
    surrogates; print it back as the bytes it was, as Slurm's C commands do, instead of failing
    on a terminal whose locale makes Python's output strict (en_US.UTF-8)."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")


def command_name() -> str:
    """How to type ``minislurm`` again in this shell, for the hints the commands print: the bare
    name when PATH finds this very program, else its path (``.venv/bin/minislurm`` in a checkout
    whose virtualenv is not activated)."""
    import os
    import shutil

    me = sys.argv[0]
    if os.path.basename(me) != "minislurm":
        return "minislurm"  # started some other way (python -m, a test): the installed name
    found = shutil.which("minislurm")
    if found and os.path.exists(me) and os.path.samefile(found, me):
        return "minislurm"
    relative = os.path.relpath(me)
    return relative if not relative.startswith("..") else os.path.abspath(me)


if __name__ == "__main__":
    sys.exit(main())
