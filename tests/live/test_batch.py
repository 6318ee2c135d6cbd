"""sbatch against a live cluster: what it prints, where output goes, exit codes, options, the
batch environment (reference sections 1.1-1.3, 5.3 and 6.3)."""

from __future__ import annotations

import re

import pytest

from livekit import read_when, until

pytestmark = pytest.mark.live


def env_of(text: str) -> dict[str, str]:
    """``env -0`` output as a dict."""
    return dict(item.split("=", 1) for item in text.split("\0") if "=" in item)


def test_submitted_line_parsable_and_wrap(live):
    r = live.run("sbatch", "--wrap", "true")
    assert r.returncode == 0 and r.stderr == ""
    first = int(re.fullmatch(r"Submitted batch job (\d+)\n", r.stdout).group(1))
    r = live.run("sbatch", "--parsable", "--wrap", "true")
    assert r.returncode == 0 and r.stdout == f"{first + 1}\n"
    for job_id in (first, first + 1):
        job = live.wait(job_id)
        assert (job["state"], job["exit_code"], job["name"]) == ("COMPLETED", "0:0", "wrap")
    # the default output file is slurm-%j.out in the submit directory
    assert (live.work / f"slurm-{first}.out").exists()


def test_job_names_default_from_script_stdin(live):
    script = live.work / "named.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    a = live.sbatch(str(script))
    b = live.sbatch(script="#!/bin/sh\necho hi\n")
    assert live.wait(a)["name"] == "named.sh"
    assert live.wait(b)["name"] == "sbatch"


def test_output_patterns_and_separate_error(live):
    job_id = live.sbatch("-J", "pat", "-o", "out-%x-%j-%N.txt", "-e", "err-%j.txt",
                         "--wrap", "echo to-stdout; echo to-stderr >&2")
    assert live.wait(job_id)["state"] == "COMPLETED"
    assert (live.work / f"out-pat-{job_id}-gpu01.txt").read_text() == "to-stdout\n"
    assert (live.work / f"err-{job_id}.txt").read_text() == "to-stderr\n"


def test_array_files_and_environment(live):
    r = live.run("sbatch", "--array=1-5:2", "-o", "arr-%A_%a.out", "--wrap", "env -0")
    assert r.returncode == 0
    master = int(r.stdout.split()[-1])
    tasks = {j["array_task_id"]: j for j in live.api.call("GET", "/jobs", query={"ids": master})["jobs"]}
    assert sorted(tasks) == [1, 3, 5]
    for index, job in tasks.items():
        assert live.wait(job["job_id"])["state"] == "COMPLETED"
        env = env_of((live.work / f"arr-{master}_{index}.out").read_text())
        assert env["SLURM_ARRAY_JOB_ID"] == str(master)
        assert env["SLURM_ARRAY_TASK_ID"] == str(index)
        assert (env["SLURM_ARRAY_TASK_COUNT"], env["SLURM_ARRAY_TASK_MIN"], env["SLURM_ARRAY_TASK_MAX"],
                env["SLURM_ARRAY_TASK_STEP"]) == ("3", "1", "5", "2")
        assert env["SLURM_JOB_ID"] == str(job["job_id"])
    # without -o an array task writes slurm-%A_%a.out
    master = int(live.run("sbatch", "--parsable", "--array=0-1", "--wrap", "true").stdout)
    for j in live.api.call("GET", "/jobs", query={"ids": master})["jobs"]:
        live.wait(j["job_id"])
    assert (live.work / f"slurm-{master}_0.out").exists() and (live.work / f"slurm-{master}_1.out").exists()


@pytest.mark.parametrize("mode", ["append", "truncate"])
def test_open_mode_across_requeue(live, mode):
    script = ("#!/bin/sh\necho run $SLURM_RESTART_COUNT\n"
              "if [ $SLURM_RESTART_COUNT = 0 ]; then sleep 60; fi\n")
    job_id = live.sbatch(f"--open-mode={mode}", "-o", f"mode-{mode}-%j.out", script=script)
    out = live.work / f"mode-{mode}-{job_id}.out"
    read_when(out, lambda t: "run 0" in t)
    r = live.run("scontrol", "requeue", str(job_id))
    assert (r.returncode, r.stderr) == (0, "")
    until(lambda: live.job(job_id)["restart_count"] == 1 and live.job(job_id)["state"] == "PENDING",
          10, "the requeue")
    assert live.wait(job_id, timeout=20)["state"] == "COMPLETED"
    text = out.read_text()
    r = live.run("sacct", "-D", "-X", "-j", str(job_id), "-o", "JobID,State", "--parsable2", "-n")
    assert r.stdout == f"{job_id}|REQUEUED\n{job_id}|COMPLETED\n"
    if mode == "append":
        assert re.fullmatch(rf"run 0\nslurmstepd-gpu01: error: \*\*\* JOB {job_id} ON gpu01 CANCELLED AT "
                            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d DUE TO JOB REQUEUE \*\*\*\nrun 1\n", text), text
    else:
        assert text == "run 1\n"


def test_exit_codes(live):
    ok = live.sbatch("--wrap", "exit 0")
    bad = live.sbatch("--wrap", "exit 3")
    assert (live.wait(ok)["state"], live.job(ok)["exit_code"]) == ("COMPLETED", "0:0")
    job = live.wait(bad)
    assert (job["state"], job["exit_code"], job["reason"]) == ("FAILED", "3:0", "NonZeroExitCode")
    r = live.run("sacct", "-j", f"{ok},{bad}", "-X", "-o", "JobID,State,ExitCode", "--parsable2")
    assert r.stdout == f"JobID|State|ExitCode\n{ok}|COMPLETED|0:0\n{bad}|FAILED|3:0\n"


def test_script_arguments(live):
    script = live.work / "args.sh"
    script.write_text('#!/bin/bash\necho "$#|$1|$2|$0"\n')
    job_id = live.sbatch("-o", "args-%j.out", str(script), "a", "b c")
    live.wait(job_id)
    n, one, two, zero = (live.work / f"args-{job_id}.out").read_text().rstrip("\n").split("|")
    assert (n, one, two) == ("2", "a", "b c")
    assert zero.endswith("slurm_script")  # the spooled copy runs, as slurmstepd does


def test_directive_precedence(live):
    """Script directives < SBATCH_* environment < command line (reference 1.1)."""
    script = ("#!/bin/sh\n#SBATCH -J from-script\n#SBATCH --time=7 # a trailing comment\n"
              "  #SBATCH -J indented-is-a-comment\n# plain comment\n\necho $SLURM_JOB_NAME\n"
              "#SBATCH -J after-the-first-command\n")
    a = live.sbatch("-o", "prec-%j.out", script=script)
    b = live.sbatch("-o", "prec-%j.out", script=script, env={"SBATCH_JOB_NAME": "from-env"})
    c = live.sbatch("-o", "prec-%j.out", "-J", "from-cli", script=script, env={"SBATCH_JOB_NAME": "from-env"})
    d = live.sbatch("-o", "prec-%j.out", script=script, env={"SBATCH_TIMELIMIT": "9"})
    for job_id, name in ((a, "from-script"), (b, "from-env"), (c, "from-cli")):
        job = live.wait(job_id)
        assert job["name"] == name
        assert (live.work / f"prec-{job_id}.out").read_text() == f"{name}\n"
        assert job["time_limit"] == 7 * 60
    assert live.wait(d)["time_limit"] == 9 * 60


def test_impossible_request_is_refused(live):
    before = live.sbatch("--wrap", "true")
    r = live.run("sbatch", "-J", "toobig", "--gres=gpu:8", "--wrap", "true")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("sbatch: error: Batch job submission failed: "
                        "Requested node configuration is not available\n")
    r = live.run("sbatch", "--gres=foo:1", "--wrap", "true")
    assert r.stderr == ("sbatch: error: Batch job submission failed: "
                        "Invalid generic resource (gres) specification\n")
    # As in slurmctld (checked against Slurm 22.05 in tests/docker): the request no node could
    # hold used up a job id and is accounted FAILED; the malformed one left no trace.
    after = live.sbatch("--wrap", "true")
    assert after == before + 2
    r = live.run("sacct", "-X", "-n", "-P", "-j", str(before + 1), "-o", "JobName,State,ExitCode,NodeList")
    assert r.stdout == "toobig|FAILED|1:0|None assigned\n"


def _batch_env(live, *args) -> tuple[int, dict[str, str]]:
    job_id = live.sbatch("-o", "benv-%j.out", *args, "--wrap", "env -0")
    assert live.wait(job_id)["state"] == "COMPLETED"
    return job_id, env_of((live.work / f"benv-{job_id}.out").read_text())


def test_batch_environment_without_task_count(live):
    job_id, env = _batch_env(live, "-N2", "--gres=gpu:2", "-J", "envjob")
    expect = {
        "SLURM_JOB_ID": str(job_id), "SLURM_JOBID": str(job_id), "SLURM_JOB_NAME": "envjob",
        "SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_NODELIST": "gpu[01-02]", "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NNODES": "2", "SLURM_JOB_PARTITION": "gpu", "SLURM_TASKS_PER_NODE": "1(x2)",
        "SLURM_CLUSTER_NAME": "minislurm", "SLURM_SUBMIT_DIR": str(live.work), "SLURM_RESTART_COUNT": "0",
        "SLURMD_NODENAME": "gpu01", "ENVIRONMENT": "BATCH", "HOSTNAME": "gpu01",
        "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_GPUS_ON_NODE": "2",
        "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0",
    }
    assert {k: env.get(k) for k in expect} == expect
    assert "SLURM_NTASKS" not in env and "SLURM_NPROCS" not in env
    assert env["SLURM_CONF"] == str(live.c.conf_path)
    assert re.fullmatch(r"\d+", env["SLURM_TASK_PID"])


def test_batch_environment_with_task_counts(live):
    _, env = _batch_env(live, "-N2", "--ntasks-per-node=4")
    assert (env["SLURM_NTASKS"], env["SLURM_NPROCS"], env["SLURM_TASKS_PER_NODE"],
            env["SLURM_NTASKS_PER_NODE"]) == ("8", "8", "4(x2)", "4")
    assert env["SLURM_JOB_CPUS_PER_NODE"] == "4(x2)"
    assert "SLURM_JOB_GPUS" not in env and "CUDA_VISIBLE_DEVICES" not in env
    _, env = _batch_env(live, "-n", "3")
    assert (env["SLURM_NTASKS"], env["SLURM_TASKS_PER_NODE"], env["SLURM_JOB_NUM_NODES"]) == ("3", "3", "1")
