"""A step's task starts through dash when it can (:data:`minislurm.slurmd.spawn.TASK_SHELL`):
what the task sees and what it prints must be what the Python launcher gives, case by case."""

import asyncio
import re

import pytest

from minislurm.slurmd import spawn as spawn_mod
from minislurm.slurmd.spawn import Identity, spawn

pytestmark = pytest.mark.skipif(spawn_mod.task_shell() is None, reason="no dash on this machine")


def _run(argv, cwd, env):
    async def go():
        started = await spawn(argv, env, str(cwd), Identity(), stdout=asyncio.subprocess.PIPE,
                              stderr=asyncio.subprocess.PIPE)
        out, err = await started.proc.communicate()
        return started.proc.pid, out.decode(), err.decode(), started.proc.returncode
    return asyncio.run(go())


def _both(monkeypatch, argv, cwd, env):
    fast = _run(argv, cwd, env)
    with monkeypatch.context() as m:
        m.setattr(spawn_mod, "task_shell", lambda: None)
        slow = _run(argv, cwd, env)
    # the pid differs from run to run: each must name its own process
    for pid, out, _, _ in (fast, slow):
        assert f"SLURM_TASK_PID={pid}\n" in out or "SLURM_TASK_PID" not in out
    def strip(result, coerced=""):
        lines = re.sub(r"SLURM_TASK_PID=\d+", "SLURM_TASK_PID=N", result[1]).splitlines()
        return sorted(line for line in lines if line != coerced), result[2], result[3]
    # With no locale set, the launcher's Python adds LC_CTYPE=C.UTF-8 (its locale coercion); Slurm adds none.
    coerced = "LC_CTYPE=C.UTF-8" if not {"LC_ALL", "LC_CTYPE", "LANG"} & set(env) else ""
    return strip(fast), strip(slow, coerced)


@pytest.mark.parametrize("case", ["env", "umask", "no umask", "bad umask", "missing folder", "missing command",
                                  "not executable", "no shebang", "a path", "empty PATH entry"])
def test_the_fast_start_is_the_launchers(tmp_path, monkeypatch, case):
    (tmp_path / "noexec").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "plain").write_text("echo plain $0\n")
    (tmp_path / "plain").chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PWD": "/somewhere", "OLDPWD": "/before", "SLURM_UMASK": "0027", "X": "a b"}
    argv, cwd = ["env"], tmp_path
    if case == "umask":
        argv = ["sh", "-c", "umask"]
    elif case == "no umask":
        argv, env = ["sh", "-c", "umask; env | sort"], {"PATH": "/usr/bin:/bin"}
    elif case == "bad umask":
        argv, env = ["sh", "-c", "umask"], {**env, "SLURM_UMASK": "99"}
    elif case == "missing folder":
        argv, cwd = ["sh", "-c", "pwd"], tmp_path / "gone"
    elif case == "missing command":
        argv = ["no-such-command-here", "x"]
    elif case == "not executable":
        argv = [str(tmp_path / "noexec")]
    elif case == "no shebang":
        argv = ["./plain"]
    elif case == "a path":
        argv = ["/usr/bin/env"]
    elif case == "empty PATH entry":
        argv, env = ["plain"], {**env, "PATH": "/usr/bin::/bin"}
    fast, slow = _both(monkeypatch, argv, cwd, env)
    assert fast == slow
