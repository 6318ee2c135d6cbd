"""The lines the commands tell a newcomer to type next work as printed: after `make demo` only
``.venv/bin/minislurm`` exists, so a hint that says ``minislurm env`` would fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from minislurm.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
VENV_MINISLURM = Path(sys.executable).parent / "minislurm"


def test_the_hint_names_the_program_as_this_shell_finds_it(monkeypatch, tmp_path):
    program = tmp_path / "venv" / "bin" / "minislurm"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(program), "cluster", "up"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert cli.command_name() == "venv/bin/minislurm"  # not on PATH: its path, as typed from here
    monkeypatch.setenv("PATH", f"{program.parent}:/usr/bin:/bin")
    assert cli.command_name() == "minislurm"  # on PATH: the bare name finds this very program
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert cli.command_name() == str(program)  # from elsewhere: the absolute path


def test_cluster_up_prints_lines_that_work_without_the_venv_on_path(tmp_path):
    folder = tmp_path / "cluster"
    env = dict(os.environ, PATH="/usr/bin:/bin")
    up = subprocess.run([str(VENV_MINISLURM), "cluster", "up", "--dir", str(folder), "--nodes", "1",
                         "--gpus-per-node", "1"], cwd=tmp_path, env=env, capture_output=True, text=True,
                        timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        use = next(line for line in up.stdout.splitlines() if "use it:" in line)
        env_line = use.split('eval "$(', 1)[1].split(')"', 1)[0]
        assert env_line.split()[0] != "minislurm"
        shown = subprocess.run(env_line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=60)
        assert shown.returncode == 0 and "PATH=" in shown.stdout, shown.stderr
        stop = next(line for line in up.stdout.splitlines() if "stop it:" in line).split("stop it:", 1)[1]
    finally:
        stop_cmd = stop.strip() if up.returncode == 0 else f"{VENV_MINISLURM} cluster down --dir {folder}"
        down = subprocess.run(stop_cmd, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
    assert down.returncode == 0 and "down" in down.stdout, down.stderr
