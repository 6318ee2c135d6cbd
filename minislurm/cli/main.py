"""``minislurm <command>``: the entry point.  Imports stay inside the commands so each starts fast."""

from __future__ import annotations

import argparse
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
    "scontrol": ("minislurm.cli.scontrol", "view and change jobs, nodes, reservations"),
    "sprio": ("minislurm.cli.sprio", "view the priority factors of pending jobs"),
    "sshare": ("minislurm.cli.sshare", "view fair-share usage"),
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
    import importlib
    return importlib.import_module(entry[0]).main(argv[1:])


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports errors the way Slurm's tools do (``prog: error: ...``, exit 1).

    ``-h`` is left free: squeue, sinfo and sacct use it for ``--noheader``; help is ``--help``.
    """

    def __init__(self, *args, **kwargs):
        kwargs["add_help"] = False
        super().__init__(*args, **kwargs)
        self.add_argument("--help", action="help", help="show this help and exit")

    def error(self, message: str):  # noqa: D401 - argparse hook
        self.exit(1, f"{self.prog}: error: {message}\n")


if __name__ == "__main__":
    sys.exit(main())
