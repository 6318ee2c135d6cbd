"""srun as Slurm 22.05 has it, against a live cluster: a step's ``-o/-e/-i`` files with their
patterns, ``--immediate``, heterogeneous jobs refused, ``--cpus-per-task`` not inherited from the
job, ``--export`` and the input variables (``SLURM_NPROCS``)."""

from __future__ import annotations

import os
import pwd
import re
import time

import pytest

pytestmark = [pytest.mark.live, pytest.mark.timeout(90)]

CLUSTER = {"nodes": 2, "gpus_per_node": 4, "cpus_per_node": 4}
SAY = 'echo out $SLURM_PROCID $SLURMD_NODENAME; echo err $SLURM_PROCID >&2'


def _files(folder, glob: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.glob(glob))}


def test_output_per_task_takes_the_tasks_streams(live):
    """``-o out-%t.txt``: a file per task, stderr with it (``-e`` follows ``-o``); srun prints nothing."""
    r = live.run("srun", "-N2", "-n4", "-o", "pt-%t.txt", "bash", "-c", SAY, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    nodes = ["gpu01", "gpu01", "gpu01", "gpu02"]  # block fills gpu01 first, as Slurm 22.05 does
    assert _files(live.work, "pt-*.txt") == {f"pt-{t}.txt": f"out {t} {nodes[t]}\nerr {t}\n" for t in range(4)}


def test_output_and_error_patterns_per_node_job_and_step(live):
    r = live.run("srun", "-N2", "-n4", "-J", "nm", "-o", "pn-%N-%n-%x-%u.out", "-e", "pe-%j.%s-%2t.err",
                 "bash", "-c", SAY, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    user = pwd.getpwuid(os.getuid()).pw_name
    outs = _files(live.work, "pn-*.out")
    assert sorted(outs) == [f"pn-gpu01-0-nm-{user}.out", f"pn-gpu02-1-nm-{user}.out"]
    assert [sorted(t.splitlines()) for t in outs.values()] == [["out 0 gpu01", "out 1 gpu01", "out 2 gpu01"],
                                                              ["out 3 gpu02"]]
    errs = _files(live.work, "pe-*.err")
    (job,) = {re.fullmatch(r"pe-(\d+)\.0-0\d\.err", name).group(1) for name in errs}
    assert errs == {f"pe-{job}.0-0{t}.err": f"err {t}\n" for t in range(4)}


def test_one_output_file_is_written_by_srun(live):
    """A name without a per-task pattern is one file for the step, ``-l`` labels included."""
    r = live.run("srun", "-n2", "-l", "-o", "one-%j.txt", "bash", "-c", SAY, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    (text,) = _files(live.work, "one-*.txt").values()
    assert sorted(text.splitlines()) == ["0: err 0", "0: out 0 gpu01", "1: err 1", "1: out 1 gpu01"]
    r = live.run("srun", "-n2", "-o", "two.txt", "-e", "none", "bash", "-c", SAY, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert sorted((live.work / "two.txt").read_text().splitlines()) == ["out 0 gpu01", "out 1 gpu01"]


def test_output_of_one_task_or_none(live):
    r = live.run("srun", "-n3", "-o", "1", "bash", "-c", SAY, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "out 1 gpu01\n", "err 1\n")
    r = live.run("srun", "-n2", "-o", "none", "bash", "-c", SAY, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_input_per_task(live):
    for t in range(2):
        (live.work / f"in-{t}.txt").write_text(f"for task {t}\n")
    r = live.run("srun", "-N2", "-n2", "-l", "-i", "in-%t.txt", "cat", input="not this\n", timeout=30)
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, ["0: for task 0", "1: for task 1"])
    # a pattern without %t, %n or %N is one file, which srun opens and every task reads
    (live.work / f"in-{pwd.getpwuid(os.getuid()).pw_name}.txt").write_text("for all\n")
    r = live.run("srun", "-n2", "-i", "in-%u.txt", "cat", input="not this\n", timeout=30)
    assert (r.returncode, r.stdout) == (0, "for all\nfor all\n")
    r = live.run("srun", "-i", "missing-%u.txt", "cat", timeout=30)
    assert (r.returncode, r.stderr) == (1, "srun: error: Could not open stdin file: No such file or directory\n")


def test_output_in_a_batch_step_and_a_file_that_cannot_be_opened(live):
    step = "srun -o st-%j.%s.%t printenv SLURMD_NODENAME\n"
    job_id = live.sbatch("-N1", "-o", "batch-%j.out", script=f"#!/bin/bash\n{step}{step}")
    assert live.wait(job_id)["state"] == "COMPLETED"
    assert (live.work / f"batch-{job_id}.out").read_text() == ""
    assert _files(live.work, f"st-{job_id}.*") == {f"st-{job_id}.0.0": "gpu01\n", f"st-{job_id}.1.0": "gpu01\n"}
    r = live.run("srun", "-o", "no-such-dir/%t.out", "true", timeout=30)
    assert r.returncode == 1 and r.stdout == ""
    r2 = live.run("srun", "-o", "no-such-dir/all.out", "true", timeout=30)
    assert (r2.returncode, r2.stderr) == (1, "srun: error: Could not open stdout file: No such file or directory\n")
    assert r.stderr.splitlines()[0] == (f"slurmstepd-gpu01: error: Could not open stdout file "
                                         f"{live.work}/no-such-dir/0.out: No such file or directory")


BUSY = "error: Unable to allocate resources: Requested nodes are busy\n"


def test_immediate_gives_up_when_the_nodes_are_busy(live):
    live.reset()
    blocker = live.sbatch("-N2", "--gres=gpu:4", "--wrap", "sleep 300")
    live.wait(blocker, "RUNNING")
    try:
        for command, at_least in ((["srun", "--immediate"], 0), (["srun", "-I2"], 2),
                                  (["salloc", "--immediate=1"], 0)):
            start = time.monotonic()
            r = live.run(*command, "-N1", "--gres=gpu:1", "true", timeout=30)
            prog = command[0]
            assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{prog}: {BUSY}"), command
            assert at_least <= time.monotonic() - start < at_least + 10, command
        # nothing is left waiting: each request was taken back
        left = [j for j in live.api.call("GET", "/jobs")["jobs"] if j["state"] == "PENDING"]
        assert left == []
    finally:
        live.run("scancel", str(blocker))
    live.idle()
    r = live.run("srun", "--immediate", "-N1", "--gres=gpu:1", "echo", "ran", timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "ran\n", "")


HETJOB = "error: Heterogeneous jobs are not supported by minislurm\n"


def test_heterogeneous_allocations_outside_a_script_are_refused_at_submission(live):
    """minislurm makes heterogeneous jobs from ``#SBATCH hetjob`` only (tests/live/test_hetjob.py);
    ``:`` on the command line of salloc, sbatch, or srun outside a job is refused, never run
    with one component alone."""
    before = len(live.api.call("GET", "/jobs")["jobs"])
    for argv in (["srun", "-N1", "hostname", ":", "-N1", "hostname"], ["srun", "--het-group=0", "hostname"],
                 ["salloc", "-N1", ":", "-N1", "true"], ["sbatch", "-N1", ":", "-N1", "--wrap", "true"]):
        r = live.run(*argv, timeout=30)
        assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{argv[0]}: {HETJOB}"), argv
    assert len(live.api.call("GET", "/jobs")["jobs"]) == before  # nothing reached the controller
    # after the script's name a ':' is only an argument of the script
    (live.work / "args.sh").write_text("#!/bin/sh\necho \"$@\"\n")
    job_id = live.sbatch("-o", "args-%j.out", "args.sh", ":", "x")
    assert live.wait(job_id)["state"] == "COMPLETED"
    assert (live.work / f"args-{job_id}.out").read_text() == ": x\n"


def test_a_step_does_not_inherit_the_jobs_cpus_per_task(live):
    """Slurm 22.05: srun ignores SLURM_CPUS_PER_TASK (set in the job's environment by sbatch -c
    and salloc -c); ``srun -c`` or SRUN_CPUS_PER_TASK asks for more CPUs per task."""
    script = ("#!/bin/bash\necho job $SLURM_CPUS_PER_TASK\nsrun -n2 bash -c 'echo task $SLURM_PROCID'\n"
              "SRUN_CPUS_PER_TASK=2 srun -n2 true || echo refused\nsrun -n1 -c2 true && echo c2\n")
    job_id = live.sbatch("-N1", "-n1", "-c2", "-o", "cpt-%j.out", script=script)
    assert live.wait(job_id)["state"] == "COMPLETED"
    lines = (live.work / f"cpt-{job_id}.out").read_text().splitlines()
    assert lines[0] == "job 2" and sorted(lines[1:3]) == ["task 0", "task 1"]
    assert lines[3:] == [f"srun: error: Unable to create step for job {job_id}: More processors requested than "
                         "permitted", "refused", "c2"]
    r = live.run("salloc", "-N1", "-n1", "-c2", "bash", "-c",
                 "echo $SLURM_CPUS_PER_TASK; srun -n2 echo ran", timeout=60)
    assert r.returncode == 0 and r.stdout == "2\nran\nran\n", r.stderr


SHOW = 'echo ${FOO-unset} ${BAR-unset} ${BAZ-unset} ${SLURM_JOB_ID:+job}'


def test_export_decides_what_the_tasks_get(live):
    env = {"FOO": "1", "BAR": "2"}
    for export, seen in ((None, "1 2 unset job"), ("ALL", "1 2 unset job"), ("NONE", "unset unset unset job"),
                         ("FOO,BAZ=3", "1 unset 3 job"), ("ALL,FOO=9", "9 2 unset job"),
                         ("FOO=9,ALL", "9 2 unset job")):
        flags = [f"--export={export}"] if export else []
        r = live.run("srun", "-n2", *flags, "sh", "-c", SHOW, env=env, timeout=30)
        assert (r.returncode, r.stdout, r.stderr) == (0, f"{seen}\n" * 2, ""), export
    r = live.run("srun", "sh", "-c", SHOW, env={**env, "SLURM_EXPORT_ENV": "BAR"}, timeout=30)
    assert (r.returncode, r.stdout) == (0, "unset 2 unset job\n")


def test_input_variables_shape_the_step(live):
    """srun reads SLURM_NPROCS, SLURM_NTASKS_PER_NODE, SLURM_JOB_NAME ... as options."""
    r = live.run("srun", "sh", "-c", "echo $SLURM_PROCID", env={"SLURM_NPROCS": "3"}, timeout=30)
    assert (r.returncode, sorted(r.stdout.split())) == (0, ["0", "1", "2"])
    r = live.run("srun", "-N2", "sh", "-c", "echo $SLURMD_NODENAME $SLURM_LOCALID",
                 env={"SLURM_NTASKS_PER_NODE": "2"}, timeout=30)
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, ["gpu01 0", "gpu01 1", "gpu02 0", "gpu02 1"])
    r = live.run("srun", "-o", "one", "sh", "-c", "echo $SLURM_PROCID", env={"SLURM_STDOUTMODE": "1",
                                                                             "SLURM_NPROCS": "2"}, timeout=30)
    assert (r.returncode, r.stdout) == (0, "")  # the command line wins: -o one (a file)
    assert (live.work / "one").read_text() in ("0\n1\n", "1\n0\n")
    r = live.run("srun", "sh", "-c", "echo $SLURM_PROCID", env={"SLURM_STDOUTMODE": "1", "SLURM_NPROCS": "2"},
                 timeout=30)
    assert (r.returncode, r.stdout) == (0, "1\n")
