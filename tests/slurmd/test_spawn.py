"""The launcher: what every batch script and task runs first, already as the job's user
(here: as whoever runs the tests, the agent's own user when it is not root)."""

import asyncio
import os
import signal

from minislurm.slurmd.spawn import Identity, Stdio, spawn


def run(argv, cwd, stdio=None, env=None, **kw):
    async def go():
        started = await spawn(argv, {"PATH": "/usr/bin:/bin", **(env or {})}, str(cwd), Identity(), stdio=stdio,
                              **kw)
        out = await started.proc.communicate() if kw else (None, None)
        if not kw:
            await started.proc.wait()
        return started, out
    return asyncio.run(go())


def pipes():
    return {"stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.PIPE}


def test_files_are_opened_and_the_agent_gets_the_same_stderr(tmp_path):
    out = tmp_path / "job.out"
    started, _ = run(["sh", "-c", "echo job; echo err >&2"], tmp_path, Stdio(None, str(out), str(out), "truncate"))
    assert started.error is None and started.proc.returncode == 0
    os.write(started.stderr_fd, b"slurmstepd: message\n")  # same open file, same offset: appended
    os.close(started.stderr_fd)
    assert out.read_text() == "job\nerr\nslurmstepd: message\n"


def test_a_file_that_cannot_be_opened_fails_the_launch_and_creates_nothing(tmp_path):
    target = tmp_path / "missing" / "job.out"
    started, _ = run(["sh", "-c", "echo ran"], tmp_path, Stdio(None, str(target), str(target), "truncate"))
    assert started.error == f"Could not open stdout file {target}: No such file or directory"
    assert started.proc.returncode == 1 and started.stderr_fd is None
    assert not (tmp_path / "missing").exists()
    started, _ = run(["cat"], tmp_path, Stdio(str(tmp_path / "nope"), str(tmp_path / "o"), str(tmp_path / "o")))
    assert started.error == f"Could not open stdin file {tmp_path / 'nope'}: No such file or directory"
    assert not (tmp_path / "o").exists()  # stdin first, as slurmstepd


def test_open_mode_and_umask(tmp_path):
    out = tmp_path / "job.out"
    out.write_text("before\n")
    started, _ = run(["echo", "after"], tmp_path, Stdio(None, str(out), str(out), "append"), env={"SLURM_UMASK": "077"})
    assert out.read_text() == "before\nafter\n"
    os.close(started.stderr_fd)
    new = tmp_path / "new.out"
    started, _ = run(["true"], tmp_path, Stdio(None, str(new), str(new)), env={"SLURM_UMASK": "077"})
    os.close(started.stderr_fd)
    assert os.stat(new).st_mode & 0o777 == 0o600


def test_a_folder_that_cannot_be_entered_means_tmp_with_slurms_message(tmp_path):
    missing = tmp_path / "gone"
    started, (out, err) = run(["pwd"], missing, **pipes())
    assert (out, err) == (b"/tmp\n", f"slurmstepd: error: couldn't chdir to `{missing}': No such file or directory: "
                                     f"going to /tmp instead\n".encode())


def test_exec_failures_and_scripts_without_an_interpreter_line(tmp_path):
    started, (out, err) = run(["no-such-command-here"], tmp_path, **pipes())
    assert (started.proc.returncode, err) == (2, b"slurmstepd: error: execve(): no-such-command-here: "
                                                 b"No such file or directory\n")
    script = tmp_path / "plain"
    script.write_text("echo plain $1\n")
    script.chmod(0o755)
    started, (out, _) = run([str(script), "arg"], tmp_path, **pipes())
    assert (started.proc.returncode, out) == (0, b"plain arg\n")


def test_the_job_gets_its_pid_and_default_signal_dispositions(tmp_path):
    started, (out, _) = run(["sh", "-c", "echo $SLURM_TASK_PID $$; grep SigIgn /proc/self/status"], tmp_path,
                            **pipes())
    first, second = out.decode().splitlines()
    pid, shell = first.split()
    assert pid == shell == str(started.proc.pid)
    assert int(second.split()[1], 16) & (1 << (signal.SIGPIPE - 1)) == 0  # Python ignores it; the job must not


def test_a_job_of_the_agents_own_user_starts_without_switching(monkeypatch):
    """Root started with no supplementary groups (``getgroups() == []``) holds the group that
    ``getgrouplist`` names for it: its own jobs start with no switch, so by vfork and not by a
    copy of the agent's memory (which cost ``srun -N2048 true`` seconds)."""
    from minislurm.slurmd import spawn as spawn_module

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "getegid", lambda: 0)
    monkeypatch.setattr(os, "getgroups", lambda: [])
    assert spawn_module._already(Identity(0, 0, "root", [0]))
    assert not spawn_module._already(Identity(0, 0, "root", [0, 27]))  # a group more: setgroups
    assert not spawn_module._already(Identity(1000, 1000, "alice", [1000]))
