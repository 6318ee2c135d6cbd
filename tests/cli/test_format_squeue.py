"""squeue's text, column by column (see minislurm/cli/fmt/squeue.py for the sources)."""


import pytest

from minislurm.cli.fmt.squeue import format_jobs
from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Allocation, Job, Shape
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.core.views import job_view

NOW = 1_709_294_400.0  # 2024-03-01T12:00:00 UTC
HEADER = "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"


def job(job_id, state="PENDING", **kw):
    view = {"job_id": job_id, "display_id": str(job_id), "array_job_id": None, "array_task_id": None,
            "name": "job", "user": "alice", "account": "research", "partition": "gpu", "state": state,
            "reason": "None", "priority": 100, "nice": 0, "submit_time": NOW - 600,
            "eligible_time": NOW - 600, "start_time": None, "end_time": None, "time_limit": 3600.0,
            "num_nodes": 1, "num_cpus": 8, "nodes": "", "expected_start": None, "sched_nodes": ""}
    view.update(kw)
    return view


def reference_jobs():
    return [job(1042, "RUNNING", name="llama-pretrain", start_time=NOW - 3723, num_nodes=2,
                nodes="gpu01,gpu02", priority=300),
            job(1043, name="finetune", user="bob", num_nodes=4, reason="Resources", priority=200),
            job(1044, name="eval", user="bob", reason="Priority", priority=100)]


def test_reference_example_in_job_id_order():
    assert format_jobs(reference_jobs(), now=NOW, sort="i") == HEADER + (
        "              1042       gpu llama-pr    alice  R    1:02:03      2 gpu[01-02]\n"
        "              1043       gpu finetune      bob PD       0:00      4 (Resources)\n"
        "              1044       gpu     eval      bob PD       0:00      1 (Priority)\n")


def test_default_order_is_partition_then_state_text_then_priority_descending():
    jobs = reference_jobs() + [job(7, partition="debug", name="dbg", priority=5),
                               job(8, "RUNNING", partition="debug", name="dbg2", start_time=NOW - 5,
                                   nodes="cpu01"),
                               job(1045, name="late", priority=999)]
    out = format_jobs(jobs, now=NOW).splitlines()
    assert [line.split()[0] for line in out[1:]] == ["7", "8", "1045", "1043", "1044", "1042"]


def test_noheader():
    out = format_jobs(reference_jobs(), now=NOW, noheader=True, sort="i")
    assert out.splitlines()[0] == "              1042       gpu llama-pr    alice  R    1:02:03      2 gpu[01-02]"
    assert len(out.splitlines()) == 3


def test_time_used_formats():
    jobs = [job(1, "RUNNING", start_time=NOW - 59, nodes="n1"),
            job(2, "RUNNING", start_time=NOW - 3600, nodes="n1"),
            job(3, "RUNNING", start_time=NOW - (2 * 86400 + 3 * 3600 + 4 * 60 + 5), nodes="n1"),
            job(4, "COMPLETED", start_time=NOW - 100, end_time=NOW - 40, nodes="n1")]
    assert format_jobs(jobs, fmt="%i|%M|%l|%L", now=NOW, sort="i") == (
        "JOBID|TIME|TIME_LIMIT|TIME_LEFT\n"
        "1|0:59|1:00:00|59:01\n"
        "2|1:00:00|1:00:00|0:00\n"
        "3|2-03:04:05|1:00:00|INVALID\n"
        "4|1:00|1:00:00|59:00\n")


def test_unlimited_time_limit():
    out = format_jobs([job(1, time_limit=None)], fmt="%.9l|%L", now=NOW, noheader=True)
    assert out == "UNLIMITED|UNLIMITED\n"


def test_truncation_keeps_leading_characters_both_justifications():
    jobs = [job(123456789, name="a-very-long-name", user="someone")]
    assert format_jobs(jobs, fmt="%.4i|%5j|%.3u|%12j|", now=NOW, noheader=True) == \
        "1234|a-ver|som|a-very-long-|\n"


def test_node_lists_right_justified_are_never_cut_and_are_compressed():
    jobs = [job(1, "RUNNING", nodes="gpu03,gpu01,gpu02,gpu07", start_time=NOW)]
    assert format_jobs(jobs, fmt="%.5N|%.5R|%.3M", now=NOW, noheader=True) == \
        "gpu[01-03,07]|gpu[01-03,07]|0:00\n"


def test_left_justified_node_list_with_a_width_is_cut_like_squeue():
    jobs = [job(1, "RUNNING", nodes="gpu01,gpu02", start_time=NOW)]
    assert format_jobs(jobs, fmt="%6N|", now=NOW, noheader=True) == "gpu[01|\n"


def test_reason_shown_for_pending_and_failed_but_nodes_for_node_fail():
    jobs = [job(1, "FAILED", reason="NonZeroExitCode", nodes="n1", start_time=NOW - 9, end_time=NOW),
            job(2, "TIMEOUT", reason="TimeLimit", nodes="n1", start_time=NOW - 9, end_time=NOW),
            job(3, "NODE_FAIL", reason="NodeDown", nodes="n2", start_time=NOW - 9, end_time=NOW),
            job(4, "COMPLETING", nodes="n3", start_time=NOW - 9, end_time=NOW),
            job(5, "OUT_OF_MEMORY", reason="OutOfMemory", nodes="n4", start_time=NOW - 9, end_time=NOW),
            job(6, reason="ReqNodeNotAvail, UnavailableNodes:n[5-6]")]
    assert format_jobs(jobs, fmt="%i %t %R", now=NOW, sort="i", noheader=True) == (
        "1 F (NonZeroExitCode)\n2 TO (TimeLimit)\n3 NF n2\n4 CG n3\n5 OOM (OutOfMemory)\n"
        "6 PD (ReqNodeNotAvail, UnavailableNodes:n[5-6])\n")


def test_pending_array_tasks_collapse_running_tasks_do_not():
    tasks = [job(1080 + i, "RUNNING" if i < 5 else "PENDING", display_id=f"1080_{i}", array_job_id=1080,
                 array_task_id=i, name="sweep", start_time=NOW - 30 if i < 5 else None,
                 nodes=f"gpu{i:02d}" if i < 5 else "", reason="None" if i < 5 else "Resources")
             for i in range(1, 1025)]
    out = format_jobs(tasks, now=NOW, sort="i").splitlines()
    assert out[1] == "            1080_1       gpu    sweep    alice  R       0:30      1 gpu01"
    assert out[5] == "     1080_[5-1024]       gpu    sweep    alice PD       0:00      1 (Resources)"
    assert len(out) == 6


def test_array_throttle_and_gaps_and_mixed_reasons():
    tasks = [job(2000 + i, display_id=f"2000_{i}", array_job_id=2000, array_task_id=i, name="a",
                 array_max_tasks=4, reason="JobArrayTaskLimit" if i > 1 else "Priority")
             for i in (1, 3, 4, 5, 9)]
    assert format_jobs(tasks, fmt="%i %K %A %R", now=NOW, noheader=True) == \
        "2000_[1,3-5,9%4] 1,3-5,9%4 2000 (Priority,JobArrayTaskLimit)\n"


def test_array_flag_keeps_one_line_per_task():
    tasks = [job(10 + i, display_id=f"10_{i}", array_job_id=10, array_task_id=i) for i in range(3)]
    assert format_jobs(tasks, fmt="%i", now=NOW, noheader=True, array=True, sort="i") == "10_0\n10_1\n10_2\n"


def test_long_format_has_a_date_line_and_extended_states():
    out = format_jobs(reference_jobs()[:2], long=True, now=NOW, sort="i")
    assert out == (
        "Fri Mar  1 12:00:00 2024\n"
        "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)\n"
        "              1042       gpu llama-pr    alice  RUNNING    1:02:03   1:00:00      2 gpu[01-02]\n"
        "              1043       gpu finetune      bob  PENDING       0:00   1:00:00      4 (Resources)\n")


def test_start_shows_only_pending_jobs_sorted_by_expected_start():
    jobs = reference_jobs()
    jobs[1].update(expected_start=NOW + 7200, sched_nodes="gpu[03-06]")
    jobs[2].update(expected_start=NOW + 60)
    assert format_jobs(jobs, start=True, now=NOW) == (
        "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES SCHEDNODES           "
        "NODELIST(REASON)\n"
        "              1044       gpu     eval      bob PD 2024-03-01T12:01:00      1 (null)               "
        "(Priority)\n"
        "              1043       gpu finetune      bob PD 2024-03-01T14:00:00      4 gpu[03-06]           "
        "(Resources)\n")


def test_more_letters():
    j = job(5, "RUNNING", start_time=NOW - 60, nodes="gpu01", num_cpus=64, gres="gpu:8", batch_host="gpu01",
            dependency="afterok:4", submit_time=NOW - 120, nice=10, work_dir="/home/alice", priority=4294967295,
            account="ml", mem_per_node=65536)
    fmt = "%a|%b|%B|%c|%C|%D|%e|%E|%F|%m|%p|%Q|%q|%r|%S|%T|%U|%v|%V|%y|%Y|%Z|%x|%n"
    assert format_jobs([j], fmt=fmt, now=NOW, noheader=True) == (
        "ml|gres:gpu:8|gpu01|64|64|1|2024-03-01T12:59:00|afterok:4|5|64G|1.00000000000000|4294967295|normal|None|"
        "2024-03-01T11:59:00|RUNNING|0|(null)|2024-03-01T11:58:00|10|(null)|/home/alice||\n")


def test_prefix_suffix_and_bad_letter():
    assert format_jobs([job(3)], fmt="id=%i; st=%t.", now=NOW) == "id=JOBID; st=ST.\nid=3; st=PD.\n"
    with pytest.raises(ValueError):
        format_jobs([job(3)], fmt="%i %!", now=NOW)
    with pytest.raises(ValueError):
        format_jobs([job(3)], now=NOW, sort="P,!")


def test_long_names_format():
    assert format_jobs(reference_jobs()[:1], long_format="jobid:.6 ,name:10 ,timeused", now=NOW) == (
        " JOBID NAME       TIME                \n"
        "  1042 llama-pret 1:02:03             \n")


def test_from_a_real_cluster_state_via_job_view():
    state = ClusterState(simple_cluster(4, cpus=32, mem=256_000, gpus=8))
    running = state.add(Job(7, user="carol", partition="gpu", name="pretrain-70b", submit_time=NOW - 500,
                            time_limit=7200.0, num_nodes=2, shape=Shape(cpus=32, mem=200_000, gpus=8)))
    state.add(Job(8, user="dave", partition="gpu", name="eval", submit_time=NOW - 100, num_nodes=1,
                  shape=Shape(cpus=4, gpus=1)))
    state.start(running, Allocation(nodes=(0, 1), cpus=(32, 32), mem=(200_000, 200_000),
                                    gpus=((0, 1, 2, 3, 4, 5, 6, 7),) * 2), NOW - 65)
    state.jobs[8].reason = "Resources"
    views = [job_view(j, state) for j in state.jobs.values()]
    assert running.state is JobState.RUNNING
    assert format_jobs(views, now=NOW, fmt="%.6i %.5P %.8j %.6u %.2t %.8M %.4D %.6C %b %R") == (
        " JOBID PARTI     NAME   USER ST     TIME NODE   CPUS TRES_PER_NODE NODELIST(REASON)\n"
        "     8   gpu     eval   dave PD     0:00    1      4 gres:gpu:1 (Resources)\n"
        "     7   gpu pretrain  carol  R     1:05    2     64 gres:gpu:8 node[01-02]\n")


# -- a shared cluster: other users' text never drives the terminal (twin facts, issue 9) ---------
def test_control_characters_in_job_names_print_escaped():
    """Slurm 22.05 prints a name's newline or ESC raw (a forged line, a red terminal); here they
    are escapes, and widths count the escaped text."""
    jobs = [job(1, name="a\nb"), job(2, name="\x1b[31mred"), job(3, name="tab\there")]
    out = format_jobs(jobs, fmt="%i|%j|", now=NOW, sort="i")
    assert out == "JOBID|NAME|\n1|a\\nb|\n2|\\x1b[31mred|\n3|tab\\there|\n"
    assert format_jobs([job(2, name="\x1b[31mred")], now=NOW, noheader=True).split()[2] == "\\x1b[31m"
    plain = [job(4, name="naïve-λ\\n")]  # printable text, backslashes included, is left as it is
    assert format_jobs(plain, fmt="%j", now=NOW, noheader=True) == "naïve-λ\\n\n"


def test_a_width_over_the_limit_is_refused_at_once():
    """Slurm pads to any width and crashes (SIGSEGV) past a few million columns; minislurm
    refuses widths over MAX_WIDTH instead of writing gigabytes."""
    for fmt in ("%999999999i", "%.999999999j", "%1025i"):
        with pytest.raises(ValueError, match="too large"):
            format_jobs(reference_jobs(), fmt=fmt, now=NOW)
    with pytest.raises(ValueError, match="too large"):
        format_jobs(reference_jobs(), long_format="name:999999999", now=NOW)
    assert len(format_jobs(reference_jobs(), fmt="%1024i", now=NOW).splitlines()[0]) == 1024


def test_the_keys_squeue_asks_for_are_all_it_reads():
    """squeue asks the controller only for ``view_keys`` (GET /jobs?fields=); for every letter
    and sort key, printing from those keys alone must give the same bytes as from full views."""
    import random

    from minislurm.cli.fmt.squeue import LETTERS, job_fields, view_keys
    rnd = random.Random(9)
    states = ["PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "COMPLETING", "CANCELLED"]

    def some_job(i):
        array = rnd.random() < 0.3
        return job(i, rnd.choice(states), name=rnd.choice(["a", "train", "x" * 12]), user=rnd.choice(["al", "bo"]),
                   array_job_id=100 + i % 3 if array else None, array_task_id=i % 5 if array else None,
                   array_max_tasks=rnd.choice([None, 2]), partition=rnd.choice(["gpu", "debug"]),
                   reason=rnd.choice(["None", "Priority", "Resources"]), priority=rnd.randint(0, 9),
                   start_time=rnd.choice([None, NOW - rnd.randint(1, 99999)]), end_time=rnd.choice([None, NOW - 5]),
                   time_limit=rnd.choice([None, 60.0, 3600.0]), num_nodes=rnd.randint(1, 3), num_cpus=rnd.randint(1, 64),
                   nodes=rnd.choice(["", "gpu01", "gpu[01-02]"]), expected_start=rnd.choice([None, NOW + 60]),
                   account="research", qos="normal", uid=1000, nice=0, mem_per_node=4096, gres="gpu:4",
                   dependency=None, reservation=None, req_nodes="", exc_nodes="", sched_nodes="", batch_host=None,
                   work_dir="/w", command="/w/a.sh")

    jobs = [some_job(i) for i in range(1, 60)]
    letters, sorts = "".join(LETTERS), "ijPtTpQuaDCSVMleN"
    for fmt, sort in [(" ".join(f"%.9{c}" for c in letters), None), ("%i", ",".join(sorts)),
                      *((f"%10{c}", f"-{s}") for c, s in zip(letters, sorts * 3))]:
        _, fields = job_fields(fmt)
        keys = view_keys(fields, sort)
        projected = [{k: j[k] for k in keys if k in j} for j in jobs]
        assert format_jobs(projected, fmt=fmt, sort=sort, now=NOW) == format_jobs(jobs, fmt=fmt, sort=sort, now=NOW)


def test_steps_in_squeues_step_format():
    """``squeue -s``: 22.05's ``%.15i %.8j %.9P %.8u %.9M %N`` (twin session squeue_steps)."""
    from minislurm.cli.fmt.squeue import format_steps
    job = {"partition": "gpu", "user": "alice"}
    steps = [{"job_id": 7, "display_id": "7", "step": "batch", "name": "batch", "start": 100.0, "nodes": "c1"},
             {"job_id": 7, "display_id": "7", "step": "0", "name": "a-long-name", "start": 130.0, "nodes": "c[1-2]"}]
    assert format_steps(steps, {7: job}, now=165.0).splitlines() == [
        "         STEPID     NAME PARTITION     USER      TIME NODELIST",
        "        7.batch    batch       gpu    alice      1:05 c1",
        "            7.0 a-long-n       gpu    alice      0:35 c[1-2]"]
    assert format_steps([], {}, noheader=True, now=0.0) == ""
