"""A cluster's command (minislurm/cluster/system.py ``shim_text``) starts Python without
``site`` (``-S``: no scan of site-packages and .pth files at every command), yet finds minislurm
and the site-packages a command may need (PyYAML for ``--yaml``), from any directory and with
no environment at all."""

from __future__ import annotations

import subprocess
import sys

from minislurm.cluster.system import shim_text


def test_a_command_runs_without_site_and_still_finds_its_packages(tmp_path):
    shim = tmp_path / "squeue"
    shim.write_text(shim_text("squeue", tmp_path / "slurm.conf", sys.executable))
    shim.chmod(0o755)
    assert shim.read_text().startswith(f"#!{sys.executable} -S\n")
    version = subprocess.run([str(shim), "--version"], capture_output=True, text=True, env={}, cwd="/")
    assert (version.returncode, version.stdout) == (0, "slurm 22.05.8\n")
    # The shim's own lines up to minislurm's main, then a question: no site, and PyYAML found
    probe = shim.read_text().split("from minislurm.cli.main")[0] + (
        "import yaml\nprint('site' in sys.modules, os.environ['SLURM_CONF'])\n")
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env={}, cwd="/")
    assert result.stdout.split() == ["False", str(tmp_path / "slurm.conf")], result.stderr
