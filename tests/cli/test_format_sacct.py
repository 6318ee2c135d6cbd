"""sacct's text (see minislurm/cli/fmt/sacct.py for the sources)."""


import pytest

from minislurm.cli.fmt.sacct import format_records

NOW = 1_709_294_400.0  # 2024-03-01T12:00:00 UTC


def rec(job_id, step=None, **kw):
    r = {"job_id": job_id, "display_id": str(job_id), "step": step, "name": "job", "partition": "gpu",
         "account": "research", "user": "alice", "uid": 1000, "state": "COMPLETED", "cancelled_by": None,
         "exit_code": 0, "exit_signal": 0, "submit": NOW - 7200, "eligible": NOW - 7200,
         "start": NOW - 3600, "end": NOW - 60, "time_limit": 86400.0, "alloc_cpus": 16, "alloc_gpus": 8,
         "nnodes": 2, "nodes": "gpu[01-02]", "restart": 0, "req_mem": 65536, "work_dir": "/home/alice"}
    r.update(kw)
    return r


def reference_records():
    running = {"state": "RUNNING", "end": None}
    return [rec(1042, name="llama-pretrain", alloc_cpus=32, **running),
            rec(1042, "batch", name="batch", partition="", **running),
            rec(1042, "extern", name="extern", partition="", alloc_cpus=32, **running),
            rec(1042, "0", name="python", partition="", alloc_cpus=32, **running),
            rec(1040, name="train", state="CANCELLED", cancelled_by=1000),
            rec(1041, name="oom", alloc_cpus=8, state="FAILED", exit_code=1)]


def test_reference_example_default_fields():
    assert format_records(reference_records()) == (
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n"
        "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
        "1042         llama-pre+        gpu   research         32    RUNNING      0:0 \n"
        "1042.batch        batch              research         16    RUNNING      0:0 \n"
        "1042.extern      extern              research         32    RUNNING      0:0 \n"
        "1042.0           python              research         32    RUNNING      0:0 \n"
        "1040              train        gpu   research         16 CANCELLED+      0:0 \n"
        "1041                oom        gpu   research          8     FAILED      1:0 \n")


def test_parsable2_and_parsable():
    records = reference_records()[4:]
    assert format_records(records, parsable2=True) == (
        "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode\n"
        "1040|train|gpu|research|16|CANCELLED by 1000|0:0\n"
        "1041|oom|gpu|research|8|FAILED|1:0\n")
    assert format_records(records, parsable=True, noheader=True, fields=["jobid", "state"]) == (
        "1040|CANCELLED by 1000|\n"
        "1041|FAILED|\n")


def test_fields_case_insensitive_prefix_and_widths():
    records = [rec(1040, name="train", state="CANCELLED", cancelled_by=1000, exit_signal=15)]
    assert format_records(records, fields=["jobid%-8", "STATE%20", "exit", "jobname%-4", "node"]) == (
        "JobID                   State ExitCode JobN        NodeList \n"
        "-------- -------------------- -------- ---- --------------- \n"
        "1040        CANCELLED by 1000     0:15 tra+      gpu[01-02] \n")


def test_times_elapsed_and_unknowns():
    records = [rec(7, name="done"),
               rec(8, name="running", state="RUNNING", end=None),
               rec(9, name="waiting", state="PENDING", start=None, end=None, alloc_cpus=0, alloc_gpus=0,
                   nodes="None assigned", time_limit=None),
               rec(10, name="long", start=NOW - 3 * 86400 - 5, end=NOW)]
    fields = ["JobID", "Submit", "Eligible", "Start", "End", "Elapsed", "Timelimit", "ElapsedRaw"]
    assert format_records(records, fields=fields, parsable2=True, now=NOW) == (
        "JobID|Submit|Eligible|Start|End|Elapsed|Timelimit|ElapsedRaw\n"
        "7|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|2024-03-01T11:59:00|00:59:00|1-00:00:00|3540\n"
        "8|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|Unknown|01:00:00|1-00:00:00|3600\n"
        "9|2024-03-01T10:00:00|2024-03-01T10:00:00|Unknown|Unknown|00:00:00|UNLIMITED|0\n"
        "10|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-02-27T11:59:55|2024-03-01T12:00:00|3-00:00:05|"
        "1-00:00:00|259205\n")


def test_alloc_tres_user_nodes_and_steps():
    records = [rec(1042, name="pretrain"), rec(1042, "batch", name="batch", nnodes=1, nodes="gpu01",
                                               alloc_gpus=8, partition=""),
               rec(1043, name="pend", state="PENDING", start=None, end=None, alloc_cpus=0, alloc_gpus=0,
                   nodes="None assigned", req_mem=0)]
    fields = ["JobID", "User", "UID", "Partition", "NNodes", "AllocNodes", "NodeList", "ReqMem", "AllocTRES",
              "WorkDir"]
    assert format_records(records, fields=fields, parsable2=True) == (
        "JobID|User|UID|Partition|NNodes|AllocNodes|NodeList|ReqMem|AllocTRES|WorkDir\n"
        "1042|alice|1000|gpu|2|2|gpu[01-02]|64G|billing=16,cpu=16,gres/gpu=8,mem=128G,node=2|/home/alice\n"
        "1042.batch||||1|1|gpu01|64G|cpu=16,gres/gpu=8,mem=64G,node=1|/home/alice\n"
        "1043|alice|1000|gpu|2|0|None assigned|0||/home/alice\n")


def test_array_ids_and_raw_ids():
    records = [rec(2005, display_id="2000_3", name="sweep"), rec(2005, "batch", display_id="2000_3", name="batch")]
    assert format_records(records, fields=["JobID", "JobIDRaw"], noheader=True) == (
        "2000_3       2005         \n"
        "2000_3.batch 2005.batch   \n")


def test_long_job_ids_are_cut_with_plus():
    records = [rec(1234567, "extern", name="extern", partition="")]
    assert format_records(records, fields=["JobID"], noheader=True) == "1234567.ext+ \n"


def test_unknown_field_is_an_error_like_sacct():
    with pytest.raises(ValueError, match='Invalid field requested: "Restarts"'):
        format_records([rec(1)], fields=["Restarts"])


def test_control_characters_in_job_names_print_escaped():
    """Slurm prints a job name's newline raw (sacct -P rows split in two, as seen on the twin)."""
    records = [rec(22, name="a\nb"), rec(23, name="\x1b[31mred")]
    assert format_records(records, fields=["JobID", "JobName"], parsable2=True) == (
        "JobID|JobName\n22|a\\nb\n23|\\x1b[31mred\n")
    assert format_records(records, fields=["JobID", "JobName%12"]).splitlines()[2:] == [
        "22                   a\\nb ", "23            \\x1b[31mred "]


def test_a_width_over_the_limit_is_refused():
    with pytest.raises(ValueError, match="too large"):
        format_records([rec(1)], fields=["JobName%999999999"])
    with pytest.raises(ValueError, match="too large"):
        format_records([rec(1)], fields=["JobName%-999999999"])


def test_helpformat_lists_fields_four_to_a_line_as_sacct_e_does():
    """sacct -e on the twin: ``Account             AdminComment        AllocCPUS           AllocNodes``
    (each name left-justified in 19 columns, one space between); minislurm lists its own fields."""
    from minislurm.cli.fmt.sacct import FIELDS, field_list
    lines = field_list().splitlines()
    assert lines[0] == "Account             AllocCPUS           AllocNodes          AllocTRES          "
    assert len(lines) == -(-len(FIELDS) // 4) and all(len(line) <= 79 for line in lines)
    assert "DerivedExitCode" in field_list() and "NTasks" in field_list() and "ReqTRES" in field_list()
