"""Property tests of every parser of user text: whatever it is given, it answers with a value or
its module's documented error, never another exception (which would be a traceback in sbatch,
or a 500 in the controller), and never takes unbounded time or memory.

Texts are drawn both from all of Unicode and from each format's own alphabet (digits, ``:``,
``-``, brackets...), so the generator reaches past the first character check.
"""

from __future__ import annotations

import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from minislurm.core import hostlist, timefmt
from minislurm.core.arrays import parse_array
from minislurm.core.deps import parse_dependency
from minislurm.core.directives import build_spec, scan_directives
from minislurm.core.gresconf import ConfigError
from minislurm.core.options import OptionError, env_options, parse_options, split_options
from minislurm.core.optvalues import (parse_gpus, parse_gres, parse_int, parse_mem, parse_nodes,
                                      parse_signal)
from minislurm.core.patterns import expand_pattern
from minislurm.core.slurmconf import parse_slurm_conf
from minislurm.core.spec import spec_from_dict, spec_to_dict

NOW = 1_750_000_000.0


def grammar(alphabet: str, max_size: int = 40):
    """Text from a format's own characters, long digit runs included, or from anywhere."""
    digits = st.one_of(st.text("0123456789", min_size=1, max_size=12), st.integers(0, 5000).map(lambda n: "9" * n))
    pieces = st.one_of(st.sampled_from(list(alphabet)), digits,
                       st.sampled_from(["now", "INFINITE", "UNLIMITED", "gpu", "tux", "afterok", "singleton",
                                        "midnight", "today", "%j", "%A", "gres/"]))
    return st.one_of(st.lists(pieces, max_size=max_size).map("".join), st.text(max_size=max_size))


def raises_only(kinds, fn, *args, **kw):
    """Call fn; an exception of another type than ``kinds`` fails the test."""
    try:
        return fn(*args, **kw)
    except kinds:
        return None


@example("9" * 400)  # once an OverflowError
@given(grammar("0123456789:-+ \t"))
def test_time_limits(text):
    minutes = raises_only(ValueError, timefmt.parse_time_limit, text)
    assert minutes is None or minutes == math.inf or (minutes >= 1 and minutes == int(minutes))
    if minutes not in (None, math.inf):  # printed the way sacct does, it reads back the same
        assert timefmt.parse_time_limit(timefmt.format_elapsed(minutes * 60)) == minutes


@given(grammar("0123456789:-+/Tt nowsecondsminuteshoursdaysweeks"))
def test_begin_times(text):
    when = raises_only(ValueError, timefmt.parse_begin, text, NOW)
    if when is not None:
        assert math.isfinite(when)
        timefmt.format_timestamp(when)  # printable by squeue --start and scontrol


_RANGES = st.lists(st.tuples(st.integers(0, 70000), st.integers(0, 70000)).map(lambda r: f"[{min(r)}-{max(r)}]"),
                   min_size=1, max_size=4).map(lambda rs: "n" + "x".join(rs))


@settings(deadline=None)  # 65536 names compressed and expanded twice: bounded, not instant (and a loaded machine is slow)
@example("n[0-60000]x[0-60000]")  # once four billion names, built one by one
@example("n" + "9" * 5000)  # once a ValueError from compress
@example("n[²]")
@given(st.one_of(grammar("abcgpu0123456789[]-,  "), _RANGES))
def test_hostlists(text):
    hosts = raises_only(hostlist.HostlistError, hostlist.expand, text)
    if hosts:
        assert len(hosts) <= hostlist.MAX_RANGE
        assert hostlist.expand(hostlist.compress(hosts, sort=False)) == hosts
        assert set(hostlist.expand(hostlist.compress(hosts))) == set(hosts)
        assert hostlist.first(text) == hosts[0]


@given(grammar("0123456789-:,%"))
def test_arrays(text):
    spec = raises_only(ValueError, parse_array, text)
    if spec is not None:
        assert list(spec.indices) == sorted(set(spec.indices)) and all(0 <= i < 1001 for i in spec.indices)


@given(grammar("0123456789:,?+afterokanynotcorrsingleton"))
def test_dependencies(text):
    dep = raises_only(ValueError, parse_dependency, text)
    if dep is not None:
        assert parse_dependency(str(dep)) == dep


@example("%" + "9" * 5000 + "j")  # once a ValueError (too many digits for int())
@given(grammar("%0123456789ajAbnrstxNuJ\\/._"))
def test_output_patterns(text):
    name = expand_pattern(text, job_id=12, job_name="train", user="alice", array_job_id=10, array_task_id=3,
                          node="gpu01")
    assert isinstance(name, str) and len(name) <= 20 * len(text) + 20


@example("9" * 5000)  # once a ValueError from strtol
@given(grammar("0123456789kKmMgGtT-, \t+"))
def test_option_values(text):
    raises_only(OptionError, parse_int, "--ntasks", text)
    raises_only(OptionError, parse_nodes, text)
    raises_only(ValueError, parse_gres, text)
    raises_only(ValueError, parse_gpus, text)
    raises_only(ValueError, parse_signal, text)
    mb = parse_mem(text)
    assert mb is None or mb >= 0


_WORDS = st.lists(st.one_of(
    grammar("-=abcdefghijklmnopqrstuvwxyzN0123456789:,"),
    st.sampled_from(["-N", "-n", "-t", "--time", "--gres=gpu:2", "--array=0-3", "-w", "gpu[01-02]", "--mem=4G",
                     "--begin=now+60", "--signal=B:USR1@90", "-d", "afterok:1", "--wrap", "--exclusive", "-J",
                     "--nice", "--open-mode=a", "-o", "%j.out"])), max_size=12)


@settings(max_examples=300)
@given(_WORDS)
def test_command_lines_and_their_spec_round_trip(words):
    for prog in ("sbatch", "srun"):
        raises_only(OptionError, split_options, words, prog=prog)
        parsed = raises_only(OptionError, parse_options, words, prog=prog, now=NOW)
        if parsed is not None:
            spec = parsed[0]
            assert spec_from_dict(spec_to_dict(spec)) == spec


@given(st.dictionaries(st.sampled_from(["SBATCH_TIMELIMIT", "SBATCH_NODELIST", "SBATCH_GRES", "SBATCH_ARRAY_INX",
                                        "SBATCH_MEM_PER_NODE", "SBATCH_EXCLUSIVE", "SBATCH_REQUEUE", "SBATCH_WAIT"]),
                       grammar("0123456789:-,[]gpu=yes"), max_size=4))
def test_environment_options(environ):
    raises_only(OptionError, env_options, environ, prog="sbatch", now=NOW)


@given(st.lists(st.one_of(st.just("#!/bin/sh"), _WORDS.map(lambda w: "#SBATCH " + " ".join(w)),
                          st.text(max_size=60), st.just("#SBATCH -N 2 # note"), st.just('#SBATCH -J "a b')),
                max_size=6).map("\n".join))
def test_batch_scripts(script):
    raises_only(OptionError, scan_directives, script)
    raises_only(OptionError, build_spec, script, {}, [], now=NOW)


@settings(max_examples=300)
@given(st.lists(st.one_of(
    st.sampled_from(["NodeName=gpu[01-04] CPUs=8 RealMemory=64000 Gres=gpu:4",
                     "PartitionName=gpu Nodes=ALL Default=YES MaxTime=1-0", "GresTypes=gpu",
                     "SchedulerType=sched/backfill",
                     "NodeName=DEFAULT CPUs=4", "#minislurm: BackfillPolicy=easy", "SlurmdTimeout=300", "Include x"]),
    grammar("=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789[]-,:# \\\""),
), max_size=8).map("\n".join), st.one_of(st.none(), grammar("=NameFileCountgpu/dev/nvidia0123[]-, \n")))
def test_slurm_conf_and_gres_conf(text, gres):
    raises_only(ConfigError, parse_slurm_conf, text, gres)
