"""sbatch, srun and salloc start without what only another command or --help needs (a class of
thirty types them at once on two cores, and their start-up is most of what each waits): no
argparse (their options are core/options.py's), no help text, no cluster configuration."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("argparse", "minislurm.cli.helptext", "minislurm.cli.parsing", "minislurm.core.cluster")


@pytest.mark.parametrize("command", ["sbatch", "srun", "salloc"])
def test_a_job_command_imports_only_what_it_runs_with(command):
    probe = (f"import sys, minislurm.cli.main, minislurm.cli.{command}; "
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or 'none')")
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, check=True,
                            env={"PYTHONPATH": ":".join(p for p in sys.path if p)})
    assert result.stdout.split() == ["none"], result.stdout + result.stderr


@pytest.mark.parametrize("command", ["squeue", "sacct", "sinfo", "sshare"])
def test_a_query_command_builds_json_documents_only_when_asked(command):
    """``--json``'s module pulls in every other format's (half of squeue's imports)."""
    probe = (f"import sys, minislurm.cli.main, minislurm.cli.{command}; "
             f"print('minislurm.cli.fmt.json_out' in sys.modules)")
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, check=True,
                            env={"PYTHONPATH": ":".join(p for p in sys.path if p)})
    assert result.stdout.split() == ["False"], result.stdout + result.stderr
