"""srun's ``--het-group`` as Slurm 22.05 reads it (checked on the twin; the session hetjob_requeue
in tests/live/sessions.py runs these inside a job): numbers, ranges and lists, each component
once, the tasks in component order whatever the order given; the errors srun prints itself."""

from __future__ import annotations

import pytest

from minislurm.cli.srun_het import MAX_GROUPS, _groups, het_groups
from minislurm.core.optvalues import OptionError


@pytest.mark.parametrize(("value", "named"), [("1", [1]), ("0,1", [0, 1]), ("0-1", [0, 1]), ("1,0", [0, 1]),
                                              ("0,0", [0]), ("1-1", [1]), ("01", [1]), (" 1", [1]),
                                              ("0-1,1", [0, 1]), ("0-5", [0, 1, 2, 3, 4, 5])])
def test_numbers_ranges_and_lists(value, named):
    assert het_groups(value) == named


@pytest.mark.parametrize(("value", "item"), [("x", "x"), ("", ""), ("1-0", "1-0"), ("-1", "-1"), ("1 ", "1 "),
                                             ("0 ,1", "0 "), ("1x", "1x")])
def test_a_bad_value_names_its_bad_item(value, item):
    with pytest.raises(OptionError) as caught:
        het_groups(value)
    assert (caught.value.text, caught.value.exit_code) == (
        f"srun: error: _parse_single_range: Invalid range: `{item}'\n"
        f"srun: error: Invalid --het-group value: {value}", 1)


def test_a_huge_range_is_cut_short_but_keeps_its_end():
    named = het_groups("0-4000000000")
    assert len(named) == MAX_GROUPS and named[-1] == 4000000000 and named[:3] == [0, 1, 2]


def test_each_component_named_runs_its_groups_command_in_component_order():
    groups = _groups(["--het-group=1", "echo", "A", ":", "--het-group=0", "echo", "B"], 0.0)
    assert [(g, rest) for g, _, rest in groups] == [(0, ["echo", "B"]), (1, ["echo", "A"])]
    groups = _groups(["--het-group=0-1", "-n2", "hostname"], 0.0)
    assert [(g, spec.ntasks, rest) for g, spec, rest in groups] == [(0, 2, ["hostname"]), (1, 2, ["hostname"])]
    groups = _groups(["-l", ":", "hostname"], 0.0)  # no --het-group: the Nth group in component N
    assert [(g, rest) for g, _, rest in groups] == [(0, ["hostname"]), (1, ["hostname"])]


@pytest.mark.parametrize("argv", [["--het-group=0,1", "true", ":", "--het-group=1", "true"],
                                  ["--het-group=0,1", "true", ":", "true"],
                                  ["--het-group=1", "true", ":", "--het-group=1", "true"]])
def test_a_component_named_twice_is_fatal(argv):
    with pytest.raises(OptionError) as caught:
        _groups(argv, 0.0)
    assert (caught.value.text, caught.value.exit_code) == (
        "srun: fatal: Duplicate het groups in single srun not supported", 1)
