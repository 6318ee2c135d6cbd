"""``--help``, ``--usage`` and ``-V``/``--version`` of every command, in Slurm 22.05's form
(issue 22, item 1).

The first lines are Slurm 22.05.8's (src/*/opt*.c of that release: most commands print ``Usage:
CMD [OPTIONS]``, sacct, sstat and scontrol ``CMD [<OPTION>] ...``); all three answers exit 0 on
stdout, before any script is read or any controller asked, so no cluster is needed.  Each
command's help lists every option its parser accepts.  seff follows contribs/seff (its own
usage and ``seff Version 2.1``).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import minislurm
from minislurm.core.options import option_table

ROOT = Path(__file__).resolve().parents[2]

FIRST_LINE = {
    "sbatch": "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]",
    "srun": "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) "
            "[args(N)...]",
    "salloc": "Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)]] [command(0) [args(0)...]]",
    "squeue": "Usage: squeue [OPTIONS]",
    "scancel": "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]",
    "sinfo": "Usage: sinfo [OPTIONS]",
    "sacct": "sacct [<OPTION>]",
    "scontrol": "scontrol [<OPTION>] [<COMMAND>]",
    "sprio": "Usage: sprio [OPTIONS]",
    "sshare": "Usage:  sshare [OPTION]",
    "sstat": "sstat [<OPTION>] -j <job(.stepid)>",
    "seff": "Usage: seff [Options] <Jobid>",
    "jobstats": "Usage: jobstats [OPTIONS] JOBID",
    "sacctmgr": "sacctmgr [<OPTION>] [<COMMAND>]",
    "sdiag": "Usage: sdiag [OPTIONS]",
}
COMMANDS = list(FIRST_LINE)
# --usage: a synopsis; sacct's and sstat's are two fixed lines, sshare's and scontrol's are their help
USAGE_FIRST = {**{c: f"Usage: {c} [" for c in COMMANDS},
               "sacct": "Usage: sacct [options]", "sstat": "Usage: sstat [options] -j <job(.stepid)>",
               "sshare": FIRST_LINE["sshare"], "scontrol": FIRST_LINE["scontrol"], "seff": FIRST_LINE["seff"],
               "sacctmgr": FIRST_LINE["sacctmgr"], "sdiag": "Usage: sdiag [-M cluster] [-aritT]"}
VERSION = {**{c: "slurm 22.05.8\n" for c in COMMANDS}, "seff": "seff Version 2.1\n",
           "jobstats": f"jobstats (minislurm {minislurm.__version__})\n"}


def command(*argv: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """A command as a user types it, with no cluster to reach and nothing on stdin."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SLURM_CONF": str(tmp_path / "no-such-slurm.conf")}
    for name in ("SLURM_JOB_ID", "SLURM_JWT"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "minislurm.cli.main", *argv], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_usage_and_version_answer_in_slurms_form(name, tmp_path):
    for option, first in (("--help", FIRST_LINE[name]), ("--usage", USAGE_FIRST[name]),
                          ("-V", VERSION[name]), ("--version", VERSION[name])):
        r = command(name, option, tmp_path=tmp_path)
        assert (r.returncode, r.stderr) == (0, ""), (option, r.stderr)
        assert "Traceback" not in r.stdout
        if option == "--help":
            assert r.stdout.splitlines()[0] == first
        elif option == "--usage":
            assert r.stdout.startswith(first), r.stdout
        else:
            assert r.stdout == first


def _help_text(name: str, capsys) -> str:
    main = importlib.import_module(f"minislurm.cli.{name}").main
    try:
        rc = main(["--help"])
    except SystemExit as stop:
        rc = stop.code
    out, err = capsys.readouterr()
    assert (rc, err) == (0, "")
    return out


def _accepted(name: str) -> set[str]:
    """Every option string the command's parser takes."""
    if name in ("sbatch", "srun", "salloc"):
        return {f"--{o.name}" for o in option_table(name)} | {f"-{o.short}" for o in option_table(name) if o.short}
    return set(importlib.import_module(f"minislurm.cli.{name}").parser()._option_string_actions)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_lists_every_option_the_command_accepts(name, capsys):
    text = _help_text(name, capsys)
    missing = sorted(o for o in _accepted(name) if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text))
    assert missing == []
    # Slurm's layout: each line fits 80 columns (srun's first line excepted, as in Slurm)
    assert [line for line in text.splitlines()[1:] if len(line) > 80] == []


def test_help_comes_before_the_work_a_command_would_do(tmp_path):
    r = command("srun", "--help", tmp_path=tmp_path)  # was: srun: fatal: No command given to execute.
    assert r.returncode == 0 and "No command given" not in r.stdout + r.stderr
    assert "Parallel run options:" in r.stdout and "GPU scheduling options:" in r.stdout
    r = command("sbatch", "--usage", tmp_path=tmp_path)  # was: Batch script is empty!
    assert r.returncode == 0 and "empty" not in r.stdout + r.stderr
    r = command("sstat", "--help", tmp_path=tmp_path)  # -j is required, but not to ask for help
    assert r.returncode == 0 and r.stderr == ""


def test_getopt_order_decides_between_an_error_and_help(tmp_path):
    """Slurm acts on options as getopt reaches them: help first wins, a bad option first is refused."""
    for name, code in (("srun", 255), ("sbatch", 255), ("squeue", 1), ("scontrol", 1)):
        r = command(name, "--help", "--bogus", tmp_path=tmp_path)
        assert (r.returncode, r.stdout.splitlines()[0]) == (0, FIRST_LINE[name])
        r = command(name, "--bogus", "--help", tmp_path=tmp_path)
        assert (r.returncode, r.stdout) == (code, "")
        assert r.stderr.startswith(f"{name}: unrecognized option '--bogus'\n")
    r = command("srun", "-N2", "-V", "hostname", tmp_path=tmp_path)  # nothing runs
    assert (r.returncode, r.stdout, r.stderr) == (0, "slurm 22.05.8\n", "")


def test_short_help_where_slurm_has_one(tmp_path):
    """-h is help for sbatch, srun, salloc, sacct, sstat and scontrol; squeue, sinfo and sprio
    keep it for --noheader (their help is --help alone)."""
    for name in ("sbatch", "srun", "salloc", "sacct", "sstat", "scontrol"):
        r = command(name, "-h", tmp_path=tmp_path)
        assert (r.returncode, r.stdout.splitlines()[0]) == (0, FIRST_LINE[name])


def test_scontrol_help_and_version_commands(tmp_path):
    assert command("scontrol", "version", tmp_path=tmp_path).stdout == "slurm 22.05.8\n"
    r = command("scontrol", "help", tmp_path=tmp_path)
    assert r.returncode == 0 and r.stdout.splitlines()[0] == FIRST_LINE["scontrol"]
    assert "Valid <COMMAND> values are:" in r.stdout
    r = command("scontrol", "show", "job", "--usage", tmp_path=tmp_path)  # getopt finds options anywhere
    assert r.returncode == 0 and r.stdout.splitlines()[0] == FIRST_LINE["scontrol"]


def test_seff_keeps_contribs_seff_exit_codes_for_its_own_flags(tmp_path):
    r = command("seff", "-h", tmp_path=tmp_path)
    assert (r.returncode, r.stdout.splitlines()[0]) == (1, FIRST_LINE["seff"])
    assert command("seff", "-v", tmp_path=tmp_path).returncode == 1
    r = command("seff", tmp_path=tmp_path)  # no job id: its usage, exit 1
    assert (r.returncode, r.stdout.splitlines()[0], r.stderr) == (1, FIRST_LINE["seff"], "")


def test_minislurm_has_its_own_version_and_its_slurm_commands_slurms(tmp_path):
    r = command("--version", tmp_path=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"minislurm {minislurm.__version__}\n", "")
    r = command("sinfo", "--version", tmp_path=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "slurm 22.05.8\n", "")
