"""Every command's default output on a live cluster, against Slurm's layouts (reference 6.1-6.4):
headers, widths, truncation.  Only the clock-dependent cells are matched loosely."""

from __future__ import annotations

import os
import re
import time

import pytest

pytestmark = pytest.mark.live
T = r"\d+:\d\d"  # an elapsed time in squeue's TIME column
DATE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"


def lines_match(text: str, patterns: list[str]) -> None:
    got = text.split("\n")
    assert got[-1] == "" and len(got) - 1 == len(patterns), text
    for line, pattern in zip(got, patterns):
        assert re.fullmatch(pattern, line), f"{line!r} !~ {pattern!r}"


@pytest.fixture(scope="module")
def scene(live):
    """A finished job, a running two-node job with a step, and a pending one."""
    done = live.sbatch("--wrap", "true")
    live.wait(done)
    running = live.sbatch("-J", "llama-pretrain", "-N2", "--gres=gpu:2", "-t", "60", "--wrap", "srun sleep 60")
    live.wait(running, "RUNNING")
    pending = live.sbatch("-J", "finetune", "-N2", "--gres=gpu:4", "--wrap", "true")
    deadline = time.time() + 10
    while len(live.acct(running)) < 3 or not live.job(pending)["expected_start"]:
        assert time.time() < deadline, "the step and the plan"
        time.sleep(0.05)
    yield done, running, pending
    for job_id in (running, pending):
        live.run("scancel", str(job_id))


def test_squeue_default_and_long(live, scene):
    _, running, pending = scene
    lines_match(live.run("squeue").stdout, [
        re.escape("             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"),
        re.escape(f"{pending:>18}       gpu finetune     root PD       0:00      2 (Resources)"),
        re.escape(f"{running:>18}       gpu llama-pr     root  R ") + rf" *{T}" + re.escape("      2 gpu[01-02]"),
    ])
    lines_match(live.run("squeue", "-l").stdout, [
        r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}",
        re.escape("             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES "
                  "NODELIST(REASON)"),
        re.escape(f"{pending:>18}       gpu finetune     root  PENDING       0:00 UNLIMITED      2 (Resources)"),
        re.escape(f"{running:>18}       gpu llama-pr     root  RUNNING ") + rf" *{T}"
        + re.escape("   1:00:00      2 gpu[01-02]"),
    ])


def test_squeue_start(live, scene):
    _, running, pending = scene
    start = live.job(running)["start_time"] + 3600
    lines_match(live.run("squeue", "--start").stdout, [
        re.escape("             JOBID PARTITION     NAME     USER ST          START_TIME  NODES SCHEDNODES"
                  "           NODELIST(REASON)"),
        re.escape(f"{pending:>18}       gpu finetune     root PD ") + DATE
        + re.escape("      2 gpu[01-02]           (Resources)"),
    ])
    shown = re.search(DATE, live.run("squeue", "--start").stdout).group(0)
    assert -1 < time.mktime(time.strptime(shown, "%Y-%m-%dT%H:%M:%S")) - start <= 5  # bf_resolution


def test_sinfo_default_and_node_oriented(live, scene):
    assert live.run("sinfo").stdout == ("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
                                        "gpu*         up   infinite      2    mix gpu[01-02]\n")
    assert live.run("sinfo", "-N").stdout == ("NODELIST   NODES PARTITION STATE \n"
                                              "gpu01          1      gpu* mix   \n"
                                              "gpu02          1      gpu* mix   \n")


def test_sacct_default_and_parsable(live, scene):
    done, running, pending = scene
    r = live.run("sacct", "-j", f"{done},{running},{pending}")
    assert r.stdout == (
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n"
        "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
        f"{done:<12}       wrap        gpu    default          1  COMPLETED      0:0 \n"
        f"{str(done) + '.batch':<12}      batch               default          1  COMPLETED      0:0 \n"
        f"{running:<12} llama-pre+        gpu    default          2    RUNNING      0:0 \n"
        f"{str(running) + '.batch':<12}      batch               default          1    RUNNING      0:0 \n"
        f"{str(running) + '.0':<12}      sleep               default          2    RUNNING      0:0 \n"
        f"{pending:<12}   finetune        gpu    default          0    PENDING      0:0 \n")
    r = live.run("sacct", "-X", "-j", f"{done},{running}", "-o", "JobID,JobName,State,ExitCode,NodeList,AllocTRES",
                 "--parsable2")
    assert r.stdout == ("JobID|JobName|State|ExitCode|NodeList|AllocTRES\n"
                        f"{done}|wrap|COMPLETED|0:0|gpu01|billing=1,cpu=1,mem=8000M,node=1\n"
                        f"{running}|llama-pretrain|RUNNING|0:0|gpu[01-02]|"
                        "billing=2,cpu=2,gres/gpu=4,mem=16000M,node=2\n")


def test_scontrol_show_job(live, scene):
    _, running, _ = scene
    text = live.run("scontrol", "show", "job", str(running)).stdout
    lines = text.split("\n")
    assert lines[0] == f"JobId={running} JobName=llama-pretrain"
    for expected in ("   UserId=root(0) GroupId=root(0) MCS_label=N/A",
                     "   JobState=RUNNING Reason=None Dependency=(null)",
                     "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0",
                     "   NodeList=gpu[01-02]", "   BatchHost=gpu01",
                     "   TRES=cpu=2,mem=16000M,node=2,billing=2,gres/gpu=4",
                     "   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*",
                     f"   StdOut={live.work}/slurm-{running}.out", "   TresPerNode=gres:gpu:2"):
        assert expected in lines, (expected, text)
    assert re.search(r"^   RunTime=\d\d:\d\d:\d\d TimeLimit=01:00:00 TimeMin=N/A$", text, re.M)
    assert re.search(rf"^   StartTime={DATE} EndTime={DATE} Deadline=N/A$", text, re.M)
    r = live.run("scontrol", "show", "job", "999999")
    assert (r.returncode, r.stderr) == (1, "slurm_load_jobs error: Invalid job id specified\n")


def test_scontrol_show_node_and_partition(live, scene):
    text = live.run("scontrol", "show", "node", "gpu02").stdout
    lines = text.split("\n")
    assert lines[0] == "NodeName=gpu02 Arch=x86_64 CoresPerSocket=1 "
    for expected in ("   Gres=gpu:4", "   NodeAddr=127.0.0.1 NodeHostName=gpu02 Version=22.05.8",
                     "   State=MIXED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
                     "   Partitions=gpu ", "   CfgTRES=cpu=8,mem=64000M,billing=8,gres/gpu=4",
                     "   AllocTRES=cpu=1,mem=8000M,gres/gpu=2"):
        assert expected in lines, (expected, text)
    assert re.search(rf"^   BootTime={DATE} SlurmdStartTime={DATE}$", text, re.M), text
    # The machine's load and available memory, as the agent last reported them (slurmd's readings).
    assert re.search(r"^   CPUAlloc=1 CPUEfctv=8 CPUTot=8 CPULoad=\d+\.\d\d$", text, re.M), text
    assert re.search(r"^   RealMemory=64000 AllocMem=8000 FreeMem=\d+ Sockets=8 Boards=1$", text, re.M), text
    assert re.search(rf"^   OS={os.uname().sysname} {re.escape(os.uname().release)} ", text, re.M), text
    text = live.run("scontrol", "show", "partition", "gpu").stdout
    assert text.startswith("PartitionName=gpu\n   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n"
                           "   AllocNodes=ALL Default=YES QoS=N/A\n")
    for expected in ("   Nodes=gpu[01-02]", "   State=UP TotalCPUs=16 TotalNodes=2 SelectTypeParameters=NONE",
                     "   TRES=cpu=16,mem=125G,node=2,billing=16,gres/gpu=8",
                     "   MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED "
                     "MaxCPUsPerSocket=UNLIMITED"):
        assert expected in text.split("\n"), (expected, text)


def test_scontrol_show_hostnames(live):
    r = live.run("scontrol", "show", "hostnames", "gpu[01-02]")
    assert (r.returncode, r.stdout) == (0, "gpu01\ngpu02\n")
    r = live.run("scontrol", "show", "hostnames", env={"SLURM_JOB_NODELIST": "gpu[01,03-04]"})
    assert r.stdout == "gpu01\ngpu03\ngpu04\n"


def test_the_columns_squeue_asks_for_are_the_full_views_values(live, scene):
    """``GET /jobs?fields=`` (squeue's fast path) must give each job exactly the values of its
    full view, for every key, with finished, running, pending, held and array jobs about."""
    held = live.sbatch("--hold", "-J", "held", "-d", f"afterok:{scene[1]}", "--wrap", "true")
    array = live.sbatch("--array=1-3%2", "-o", "/dev/null", "--hold", "--wrap", "true")
    try:
        # by JobID: an array's pending tasks all show the array's id until they start
        full = {j["display_id"]: j for j in live.api.call("GET", "/jobs", query={"states": ""})["jobs"]}
        keys = sorted({k for view in full.values() for k in view})
        reply = live.api.call("GET", "/jobs", query={"fields": ",".join(keys + ["no_such_key"])})
        assert reply["count"] == len(full) and reply["fields"] == keys + ["no_such_key"]
        columns = [c if isinstance(c, list) else [c["all"]] * reply["count"] for c in reply["columns"]]
        assert {"all": None} == reply["columns"][-1]  # an unknown key reads as None
        for row in zip(*columns):
            view = full[row[keys.index("display_id")]]
            assert {k: v for k, v in zip(keys, row) if k in view} == view
            assert all(v is None for k, v in zip(keys, row) if k not in view)  # e.g. no stdout
        assert {str(held), f"{array}_1", f"{array}_3"} <= set(full)
    finally:
        live.run("scancel", str(held), str(array))


def test_other_users_control_characters_print_escaped(live):
    """A job name with a newline or an escape sequence no longer reaches the terminal raw
    (Slurm 22.05 prints both raw, see the module docstring of minislurm/cli/fmt/fields.py)."""
    red = live.sbatch("-J", "\x1b[31mred", "--hold", "--wrap", "true")
    two = live.sbatch("-J", "a\nb", "--hold", "--wrap", "true")
    try:
        assert live.run("squeue", "-h", "-j", str(red), "-o", "%i|%j|").stdout == f"{red}|\\x1b[31mred|\n"
        assert live.run("sacct", "-X", "-n", "-P", "-j", str(two), "-o", "JobID,JobName").stdout == f"{two}|a\\nb\n"
        assert live.run("scontrol", "show", "job", str(two)).stdout.startswith(f"JobId={two} JobName=a\\nb\n")
    finally:
        live.run("scancel", str(red), str(two))
