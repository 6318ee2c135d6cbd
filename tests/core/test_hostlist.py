"""Hostlists against the behaviour Slurm documents (reference section 2.2)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minislurm.core.hostlist import HostlistError, compress, expand, first


def test_man_page_example():
    assert expand("tux[1-3]") == ["tux1", "tux2", "tux3"]


def test_ranges_lists_and_several_prefixes():
    assert expand("tux[0-5,12,20-25]") == [f"tux{i}" for i in (0, 1, 2, 3, 4, 5, 12, 20, 21, 22, 23, 24, 25)]
    assert expand("a[1-2],b3 c4") == ["a1", "a2", "b3", "c4"]


def test_zero_padding_is_kept_both_ways():
    assert expand("linux[0000-0002]") == ["linux0000", "linux0001", "linux0002"]
    assert compress(["node01", "node02", "node03", "node04"]) == "node[01-04]"
    assert compress(["gpu09", "gpu10"]) == "gpu[09-10]"


def test_brackets_only_when_a_prefix_has_several_hosts():
    assert compress(["node01"]) == "node01"
    assert compress(["node01", "node02", "node05"]) == "node[01-02,05]"
    assert compress(["a1", "a2", "b3"]) == "a[1-2],b3"
    assert compress(["login"]) == "login"


def test_sorted_form_sorts_by_prefix_then_number_by_value_and_dedupes():
    assert compress(["tux2", "tux1", "tux2"]) == "tux[1-2]"
    assert compress(["n10", "n9", "n11"]) == "n[9-11]"
    assert compress(["node1", "node2", "login", "node3"]) == "login,node[1-3]"


def test_unsorted_form_is_scontrol_show_hostlist():
    assert compress(["tux2", "tux1", "tux2"], sort=False) == "tux[2,1-2]"


def test_multiple_brackets_expand_as_a_product():
    assert expand("rack[1-2]-n[01-02]") == ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]


def test_first_host_without_expanding():
    assert first("gpu[07-09,1],x") == "gpu07"
    assert first("login") == "login"
    assert first("r[2-3]-n[5-6]") == "r2-n5"


@pytest.mark.parametrize("bad", ["a[1-", "a]1[", "a[x-2]", "a[3-1]", "a[1-2]b[", "n[0-70000]"])
def test_bad_expressions_are_refused(bad):
    with pytest.raises(HostlistError, match="Invalid hostlist"):
        expand(bad)


names = st.lists(
    st.tuples(st.sampled_from(["gpu", "node", "a-b"]), st.integers(0, 120), st.sampled_from([0, 2, 3])),
    min_size=1, max_size=30,
).map(lambda items: [f"{p}{n:0{w}d}" for p, n, w in items])


@given(names)
def test_compress_then_expand_round_trips(hosts):
    assert expand(compress(hosts, sort=False)) == hosts
    assert sorted(expand(compress(hosts))) == sorted(set(hosts))
