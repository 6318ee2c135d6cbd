"""sbatch/srun options: getopt behaviour, every value format, exact error text, environment."""

import math
import signal
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minislurm.core.options import OptionError, combine, env_options, exported, option_table, parse_options
from minislurm.core.spec import GresRequest, JobSpec, SignalSpec

NOW = datetime(2025, 1, 15, 10, 0, 0).timestamp()
TRY = 'Try "sbatch --help" for more information'


def parse(*words, prog="sbatch"):
    return parse_options(list(words), prog=prog, now=NOW)


def error_of(*words, prog="sbatch"):
    with pytest.raises(OptionError) as exc:
        parse(*words, prog=prog)
    return exc.value


# --- getopt behaviour -------------------------------------------------------------------------

def test_parsing_stops_at_the_script():
    spec, rest = parse("-N2", "script.sh", "-N5", "--foo")
    assert (spec.nodes_min, spec.nodes_max) == (2, 2)
    assert rest == ["script.sh", "-N5", "--foo"]


def test_double_dash_ends_options_and_lone_dash_is_a_word():
    assert parse("-N1", "--", "-x.sh")[1] == ["-x.sh"]
    assert parse("-N1", "-", "arg")[1] == ["-", "arg"]
    assert parse()[1] == []


def test_long_forms_and_unique_prefixes():
    spec, _ = parse("--partition=gpu", "--account", "ml", "--part=cpu", "--job=x")
    assert (spec.partition, spec.account, spec.job_name) == ("cpu", "ml", "x")
    assert parse("--mem=2G")[0].mem_mb == 2048  # exact name wins over --mem-per-cpu


def test_short_clusters_and_attached_values():
    spec, rest = parse("-HN2", "-n8", "-c", "4", "-Jname", "job.sh")
    assert (spec.hold, spec.nodes_min, spec.ntasks, spec.cpus_per_task) == (True, 2, 8, 4)
    assert spec.job_name == "name" and rest == ["job.sh"]


def test_required_argument_takes_next_word_even_with_a_dash():
    assert parse("-J", "-weird")[0].job_name == "-weird"
    assert parse("--output", "--x")[0].output == "--x"


def test_optional_argument_only_with_equals():
    spec, rest = parse("--nice", "5", "job.sh")
    assert spec.nice == 100 and rest == ["5", "job.sh"]
    assert parse("--nice=-5")[0].nice == -5
    assert parse("--nice=abc")[0].nice == 0  # strtoll reads junk as 0, like Slurm
    assert parse("--exclusive", "job.sh")[1] == ["job.sh"]


@pytest.mark.parametrize(
    "words, message",
    [
        (["--foo"], "sbatch: unrecognized option '--foo'"),
        (["--foo=1"], "sbatch: unrecognized option '--foo=1'"),
        (["-Y"], "sbatch: invalid option -- 'Y'"),
        (["-HY"], "sbatch: invalid option -- 'Y'"),
        (["--hold=1"], "sbatch: option '--hold' doesn't allow an argument"),
        (["--nodes"], "sbatch: option '--nodes' requires an argument"),
        (["--ntasks-per-n"], "sbatch: option '--ntasks-per-node' requires an argument"),
        (["-N"], "sbatch: option requires an argument -- 'N'"),
        (["--mem-per"], "sbatch: option '--mem-per' is ambiguous; possibilities: "
                        "'--mem-per-cpu' '--mem-per-gpu'"),
    ],
)
def test_getopt_errors(words, message):
    err = error_of(*words)
    assert err.text == f"{message}\n{TRY}"
    assert err.exit_code == 255


def test_srun_has_its_own_table():
    spec, rest = parse("-N2", "-l", "-W", "30", "python", "train.py", "-N5", prog="srun")
    assert spec.nodes_min == 2 and spec.extra == {"label": "", "wait": "30"}
    assert rest == ["python", "train.py", "-N5"]
    assert error_of("--array=1", prog="srun").text == (
        "srun: unrecognized option '--array=1'\n" 'Try "srun --help" for more information')
    assert error_of("-l").text == f"sbatch: invalid option -- 'l'\n{TRY}"
    names = {o.name for o in option_table("sbatch")}
    assert {"array", "wrap", "parsable", "requeue"} <= names
    assert "label" not in names


def test_other_real_options_are_recorded():
    spec, _ = parse("--qos=high", "-C", "a100", "--mail-type=END", "-v", "-v")
    assert spec.extra == {"qos": "high", "constraint": "a100", "mail-type": "END", "verbose": "2"}


# --- values ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, minutes",
    [
        ("10", 10), ("10:30", 11), ("1:00:00", 60), ("1:00:01", 61), ("2-0", 2880),
        ("2-3", 3060), ("2-3:30", 3090), ("2-3:30:10", 3091), ("0", math.inf), ("-1", math.inf),
        ("INFINITE", math.inf), ("UNLIMITED", math.inf), ("unlimited", math.inf),
    ],
)
def test_every_time_format(text, minutes):
    assert parse("-t", text)[0].time_limit_min == minutes
    assert parse(f"--time-min={text}")[0].time_min_min == minutes


@pytest.mark.parametrize("text", ["abc", "inf", "1:2:3:4", "1-2-3", "", "10m"])
def test_bad_times(text):
    assert error_of(f"--time={text}").text == "sbatch: error: Invalid --time specification"
    assert error_of(f"--time-min={text}").text == "sbatch: error: Invalid --time-min specification"


@pytest.mark.parametrize(
    "text, mb",
    [("4096", 4096), ("4G", 4096), ("4g", 4096), ("1T", 1048576), ("1500K", 2), ("100M", 100),
     ("0", 0), ("16GB", 16384)],
)
def test_memory(text, mb):
    assert parse(f"--mem={text}")[0].mem_mb == mb
    assert parse(f"--mem-per-cpu={text}")[0].mem_per_cpu_mb == mb


@pytest.mark.parametrize("text", ["4X", "-1", "abc", "1.5G"])
def test_bad_memory(text):
    assert error_of(f"--mem={text}").text == "sbatch: error: Invalid --mem specification"
    assert error_of(f"--mem-per-cpu={text}").text == "sbatch: error: Invalid --mem-per-cpu specification"


def test_mem_and_mem_per_cpu_exclude_each_other():
    err = error_of("--mem=1G", "--mem-per-cpu=1G")
    assert err.text == "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
    assert err.exit_code == 1


@pytest.mark.parametrize(
    "text, gres",
    [
        ("gpu:kepler:2", (GresRequest("gpu", "kepler", 2),)),
        ("gpu:2", (GresRequest("gpu", None, 2),)),
        ("gpu", (GresRequest("gpu", None, 1),)),
        ("gpu:a100", (GresRequest("gpu", "a100", 1),)),
        ("gres/gpu:1", (GresRequest("gpu", None, 1),)),
        ("gpu:a100:2,mps:100", (GresRequest("gpu", "a100", 2), GresRequest("mps", None, 100))),
        ("bandwidth:4K", (GresRequest("bandwidth", None, 4096),)),
        ("none", ()),
    ],
)
def test_gres(text, gres):
    assert parse(f"--gres={text}")[0].gres == gres


@pytest.mark.parametrize("text", ["gpu:a:b:2", ":2", "gpu::2", "gpu,,mps", "gpu:a:b"])
def test_bad_gres(text):
    err = error_of(f"--gres={text}")
    assert err.text == "sbatch: error: Invalid generic resource (gres) specification"


def test_gres_gpu_excludes_gpus_per_node():
    err = error_of("--gres=gpu:2", "--gpus-per-node=2")
    assert err.text == "sbatch: error: Invalid generic resource (gres) specification"
    spec, _ = parse("--gres=mps:50", "--gpus-per-node=2")  # another GRES is fine
    assert spec.gpus_per_node == (None, 2)


def test_gpu_options():
    spec, _ = parse("-G", "a100:4", "--gpus-per-task=1")
    assert spec.gpus == ("a100", 4) and spec.gpus_per_task == (None, 1)
    spec, _ = parse("--gpus-per-node=volta:3,kepler:1")
    assert spec.gpus_per_node == ("volta", 3)
    assert spec.extra["gpus-per-node"] == "volta:3,kepler:1"
    assert error_of("--gpus=x").text == "sbatch: error: Invalid generic resource (gres) specification"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("B:USR1@90", SignalSpec(signal.SIGUSR1, 90, True, False)),
        ("SIGUSR1@90", SignalSpec(signal.SIGUSR1, 90, False, False)),
        ("usr2", SignalSpec(signal.SIGUSR2, 60, False, False)),
        ("10@30", SignalSpec(10, 30, False, False)),
        ("R:TERM", SignalSpec(signal.SIGTERM, 60, False, True)),
        ("RB:USR1@5", SignalSpec(signal.SIGUSR1, 5, True, True)),
        ("b:sigint@0", SignalSpec(signal.SIGINT, 0, True, False)),
        ("USR1@65535", SignalSpec(signal.SIGUSR1, 65535, False, False)),
        ("USR1@", SignalSpec(signal.SIGUSR1, 0, False, False)),
    ],
)
def test_signal(text, expected):
    assert parse(f"--signal={text}")[0].signal == expected


@pytest.mark.parametrize("text", ["FOO", "0", "70000", "USR1@70000", "USR1@x", "USR1@-1", "X:USR1", ""])
def test_bad_signal(text):
    assert error_of(f"--signal={text}").text == "sbatch: error: Invalid --signal specification"


@pytest.mark.parametrize(
    "text, nodes", [("2", (2, 2)), ("2-4", (2, 4)), ("1k", (1024, 1024)), ("-4", (1, 4)), ("3-0", (3, None))]
)
def test_nodes(text, nodes):
    spec, _ = parse(f"--nodes={text}")
    assert (spec.nodes_min, spec.nodes_max) == nodes


@pytest.mark.parametrize(
    "text, message",
    [
        ("x", '"x" is not a valid node count'),
        ("1:1", '"1:1" is not a valid node count'),
        ("2-x", '"x" is not a valid node count'),
        ("4-2", "Maximum node count 2 is less than minimum node count 4"),
        ("3-", "Maximum node count -1 is less than minimum node count 3"),  # strtol of ""
    ],
)
def test_bad_nodes(text, message):
    assert error_of("-N", text).text == f"sbatch: error: {message}"


@pytest.mark.parametrize(
    "option, name", [("-n", "--ntasks"), ("-c", "--cpus-per-task"), ("--ntasks-per-node", "--ntasks-per-node")]
)
def test_counts(option, name):
    assert getattr(parse(option, "+4")[0], name.lstrip("-").replace("-", "_")) == 4
    for bad in ("0", "x", "4 ", "-2"):
        err = error_of(option, bad)
        assert err.text == f'sbatch: error: Invalid numeric value "{bad}" for {name}.'
        assert err.exit_code == 1


def test_simple_options():
    spec, rest = parse(
        "-p", "gpu", "-A", "ml", "-J", "train", "-o", "out-%j.txt", "-e", "none", "-i", "in.txt",
        "-D", "/scratch", "--export=ALL,X=1", "--reservation=r1", "-W", "--test-only",
        "--comment=hi there", "--parsable", "--wrap=hostname", "-H",
    )
    assert (spec.partition, spec.account, spec.job_name) == ("gpu", "ml", "train")
    assert (spec.output, spec.error, spec.input) == ("out-%j.txt", "/dev/null", "in.txt")
    assert (spec.chdir, spec.export, spec.reservation) == ("/scratch", "ALL,X=1", "r1")
    assert (spec.wait, spec.test_only, spec.parsable, spec.hold) == (True, True, True, True)
    assert (spec.comment, spec.wrap) == ("hi there", "hostname")


def test_requeue_open_mode_exclusive():
    assert parse("--requeue", "--no-requeue")[0].requeue is False
    assert parse("--no-requeue", "--requeue")[0].requeue is True
    assert parse("--open-mode=append")[0].open_mode == "append"
    assert parse("--open-mode=Truncate")[0].open_mode == "truncate"
    assert error_of("--open-mode=x").text == "sbatch: error: Invalid --open-mode specification"
    assert parse("--exclusive")[0].exclusive is True
    spec, _ = parse("--exclusive=user")
    assert spec.exclusive is True and spec.extra["exclusive"] == "user"
    assert error_of("--exclusive=bogus").text == "sbatch: error: Invalid --exclusive specification"
    assert error_of("--exclusive", "-s").text == (
        "sbatch: fatal: --exclusive and --oversubscribe options are mutually exclusive")


def test_nice_range():
    assert parse("--nice=2147483645")[0].nice == 2147483645
    assert error_of("--nice=2147483646").text == (
        "sbatch: error: Invalid --nice value, out of range (+/- 2147483645)")


def test_begin_and_node_lists():
    spec, _ = parse("-b", "now+1hour", "-w", "node[01-03]", "-x", "node7,node9")
    assert spec.begin == NOW + 3600
    assert spec.nodelist == ("node01", "node02", "node03")
    assert spec.exclude == ("node7", "node9")
    assert error_of("--begin=someday").text == "sbatch: error: Invalid --begin specification"
    assert error_of("-w", "node[1-").text == "sbatch: error: Invalid node list specified"
    assert parse("-w", "./hosts.txt")[0].extra["nodefile"] == "./hosts.txt"


# --- environment -----------------------------------------------------------------------------

def test_sbatch_input_variables():
    env = {
        "SBATCH_PARTITION": "gpu", "SBATCH_TIMELIMIT": "1:00:00", "SBATCH_JOB_NAME": "envjob",
        "SBATCH_ACCOUNT": "ml", "SBATCH_GRES": "gpu:2", "SBATCH_GPUS": "4",
        "SBATCH_GPUS_PER_TASK": "1", "SBATCH_EXCLUSIVE": "", "SBATCH_OPEN_MODE": "append",
        "SBATCH_OUTPUT": "o.txt", "SBATCH_ERROR": "e.txt", "SBATCH_ARRAY_INX": "0-3",
        "SBATCH_RESERVATION": "r", "SBATCH_SIGNAL": "USR1@90", "SBATCH_WAIT": "yes",
        "SBATCH_MEM_PER_NODE": "8G", "SBATCH_EXPORT": "NONE", "SBATCH_REQUEUE": "1",
        "HOME": "/home/alice",
    }
    spec = env_options(env, now=NOW)
    assert (spec.partition, spec.time_limit_min, spec.job_name, spec.account) == ("gpu", 60, "envjob", "ml")
    assert spec.gres == (GresRequest("gpu", None, 2),) and spec.gpus == (None, 4)
    assert spec.gpus_per_task == (None, 1) and spec.exclusive is True
    assert (spec.open_mode, spec.output, spec.error) == ("append", "o.txt", "e.txt")
    assert spec.array.indices == (0, 1, 2, 3) and spec.reservation == "r"
    assert spec.signal == SignalSpec(signal.SIGUSR1, 90) and spec.wait is True
    assert (spec.mem_mb, spec.export, spec.requeue) == (8192, "NONE", True)


def test_flag_variables_follow_slurms_truth_rule():
    assert env_options({"SBATCH_NO_REQUEUE": "1"}, now=NOW).requeue is False
    assert env_options({"SBATCH_NO_REQUEUE": "1", "SBATCH_REQUEUE": "0"}, now=NOW).requeue is None
    assert env_options({"SBATCH_WAIT": "no"}, now=NOW).wait is None
    assert env_options({"SBATCH_GPUS_PER_NODE": "2"}, now=NOW).gpus_per_node == (None, 2)


def test_bad_variable_reports_the_option():
    with pytest.raises(OptionError) as exc:
        env_options({"SBATCH_TIMELIMIT": "soon"}, now=NOW)
    assert exc.value.text == "sbatch: error: Invalid --time specification"


def test_srun_input_variables():
    env = {"SLURM_NPROCS": "4", "SLURM_NTASKS": "8", "SLURM_JOB_NUM_NODES": "2",
           "SLURM_CPUS_PER_TASK": "6", "SLURM_JOB_ID": "77", "SBATCH_PARTITION": "ignored"}
    spec = env_options(env, prog="srun", now=NOW)
    # 22.05: srun does not read SLURM_CPUS_PER_TASK (the job's -c), only SRUN_CPUS_PER_TASK
    assert (spec.ntasks, spec.nodes_min, spec.cpus_per_task) == (8, 2, None)
    assert spec.partition is None and spec.extra["jobid"] == "77"
    assert env_options({**env, "SRUN_CPUS_PER_TASK": "3"}, prog="srun", now=NOW).cpus_per_task == 3


def test_combine_precedence_and_memory_rules():
    script = JobSpec(partition="s", time_limit_min=10, mem_mb=1024)
    env = env_options({"SBATCH_PARTITION": "e", "SBATCH_MEM_PER_CPU": "2G"}, now=NOW)
    cli = parse("-t", "5")[0]
    spec = combine(script, env, cli)
    assert (spec.partition, spec.time_limit_min) == ("e", 5)
    assert (spec.mem_mb, spec.mem_per_cpu_mb) == (1024, None)  # a directive beats the variable
    with pytest.raises(OptionError) as exc:
        combine(script, env, parse("--mem-per-cpu=1G")[0])
    assert exc.value.text == "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
    both = env_options({"SBATCH_MEM_PER_NODE": "1G", "SBATCH_MEM_PER_CPU": "1G"}, now=NOW)
    with pytest.raises(OptionError) as exc:
        combine(None, both, JobSpec())
    assert exc.value.text == ("sbatch: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and "
                              "SLURM_MEM_PER_NODE are mutually exclusive.")
    assert combine(None, both, parse("--mem=3G")[0]).mem_mb == 3072


@given(st.integers(1, 60 * 24 * 400))
def test_time_limit_round_trip(minutes):
    days, rest = divmod(minutes, 1440)
    text = f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"
    assert parse("-t", text)[0].time_limit_min == minutes
    assert parse("-t", str(minutes))[0].time_limit_min == minutes


@given(st.integers(0, 10**6), st.integers(1, 59))
def test_seconds_round_up(minutes, seconds):
    assert parse(f"--time={minutes}:{seconds}")[0].time_limit_min == minutes + 1


@pytest.mark.parametrize("export,expect", [
    (None, {"A": "1", "B": "2", "SLURM_X": "s"}), ("ALL", {"A": "1", "B": "2", "SLURM_X": "s"}),
    ("none", {"SLURM_X": "s"}), ("A,C=3", {"A": "1", "C": "3", "SLURM_X": "s"}),
    ("ALL,A=9", {"A": "9", "B": "2", "SLURM_X": "s"}), ("A=9,ALL", {"A": "9", "B": "2", "SLURM_X": "s"}),
    ("MISSING", {"SLURM_X": "s"})])
def test_export_lets_through_what_it_names(export, expect):
    assert exported({"A": "1", "B": "2", "SLURM_X": "s"}, export) == expect
