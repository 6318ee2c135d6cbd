"""Commands start without what only another command, another format or --help needs (a class of
thirty types them at once on two cores, and their start-up is most of what each waits): sbatch,
srun and salloc import no argparse (their options are core/options.py's), no help text and no
cluster configuration; the query commands import the ``--json`` documents only for ``--json``;
none imports pathlib, typing or http.client (srun speaks to the agents with client.Connection),
and the query commands no dataclasses (each costs 2-12 ms of CPU at every start, python -X
importtime)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("argparse", "minislurm.cli.helptext", "minislurm.cli.parsing", "minislurm.core.cluster")


def loaded(command: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter holds once ``command``'s module is imported."""
    probe = (f"import sys, minislurm.cli.main, minislurm.cli.{command}; "
             f"print(' '.join(m for m in {modules!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, check=True,
                            env={"PYTHONPATH": ":".join(p for p in sys.path if p)})
    return result.stdout.split()


@pytest.mark.parametrize("command", ["sbatch", "srun", "salloc"])
def test_a_job_command_imports_only_what_it_runs_with(command):
    assert loaded(command, HEAVY) == []


@pytest.mark.parametrize("command", ["squeue", "sacct", "sinfo", "sshare"])
def test_a_query_command_builds_json_documents_only_when_asked(command):
    assert loaded(command, ("minislurm.cli.fmt.json_out",)) == []


@pytest.mark.parametrize("command", ["squeue", "sacct", "scancel", "sinfo", "sshare"])
def test_a_query_command_imports_no_dataclasses_pathlib_or_typing(command):
    assert loaded(command, ("dataclasses", "pathlib", "typing")) == []


@pytest.mark.parametrize("command", ["sbatch", "srun", "salloc"])
def test_a_job_command_imports_no_job_table_pathlib_typing_or_http_client(command):
    assert loaded(command, ("minislurm.core.job", "pathlib", "typing", "http.client")) == []
