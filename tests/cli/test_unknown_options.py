"""An option a command does not know: glibc getopt's words and Slurm 22.05's exit codes, as the
real-Slurm twin printed them (``sinfo -V``: slurm-wlm 22.05.8; issue 20, item 8).

sbatch, srun and salloc exit 255 (Slurm's option code exits -1); the other commands exit 1.
sacct and sstat print no ``Try "... --help"`` line.  No controller is needed: the refusal
comes before any request.
"""

from __future__ import annotations

import importlib

import pytest



def run(command: str, argv: list[str], capsys) -> tuple[int, str, str]:
    main = importlib.import_module(f"minislurm.cli.{command}").main
    try:
        rc = main(argv)
    except SystemExit as stop:
        rc = stop.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-such-slurm.conf"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("command,rc,try_help", [
    ("sbatch", 255, True), ("srun", 255, True), ("salloc", 255, True),
    ("squeue", 1, True), ("sinfo", 1, True), ("scancel", 1, True), ("scontrol", 1, True),
    ("sprio", 1, True), ("sshare", 1, True), ("sacct", 1, False), ("sstat", 1, False),
    ("sacctmgr", 1, True)])
def test_an_unknown_option_is_refused_as_slurm_refuses_it(command, rc, try_help, capsys):
    tail = f'Try "{command} --help" for more information\n' if try_help else ""
    assert run(command, ["--bogus"], capsys) == (rc, "", f"{command}: unrecognized option '--bogus'\n{tail}")
    assert run(command, ["-y"], capsys) == (rc, "", f"{command}: invalid option -- 'y'\n{tail}")


def test_options_anywhere_and_their_values_are_read_as_getopt_reads_them(capsys):
    # -o takes the next word as its value, even one starting with "-"; -h groups with -Z.
    assert run("squeue", ["-o", "--bogus", "-hZ"], capsys)[2].startswith("squeue: invalid option -- 'Z'\n")
    assert run("squeue", ["--use=x", "--bog"], capsys)[2].startswith("squeue: unrecognized option '--bog'\n")
    # --us could be --user or --usage: getopt refuses it rather than guess
    assert run("squeue", ["--us=x"], capsys)[2] == (
        "squeue: option '--us=x' is ambiguous; possibilities: '--usage' '--user'\n"
        'Try "squeue --help" for more information\n')
    assert run("scontrol", ["show", "job", "-d", "--bogus=1"], capsys)[2].startswith(
        "scontrol: unrecognized option '--bogus=1'\n")
    # An option Slurm's scontrol has but minislurm does not act on is not "unrecognized".
    assert "unrecognized" not in run("scontrol", ["--quiet", "ping"], capsys)[2]
