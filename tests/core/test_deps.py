"""-d/--dependency parsing: types, AND (,), OR (?), the bare-id form, and rejections."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minislurm.core.deps import TYPES, parse_dependency
from minislurm.core.options import OptionError, parse_options

MSG = "Job dependency problem"


def test_single_term():
    dep = parse_dependency("afterok:123")
    assert dep.terms == (("afterok", (123,)),)
    assert dep.any_of is False


def test_comma_is_and():
    dep = parse_dependency("afterok:1:2,afterany:3")
    assert dep.terms == (("afterok", (1, 2)), ("afterany", (3,)))
    assert dep.any_of is False
    assert str(dep) == "afterok:1:2,afterany:3"


def test_question_mark_is_or():
    dep = parse_dependency("afterok:1?afternotok:2")
    assert dep.terms == (("afterok", (1,)), ("afternotok", (2,)))
    assert dep.any_of is True
    assert str(dep) == "afterok:1?afternotok:2"


def test_bare_ids_mean_afterany():
    assert parse_dependency("123:456").terms == (("afterany", (123, 456)),)
    assert parse_dependency("99").terms == (("afterany", (99,)),)


@pytest.mark.parametrize("kind", TYPES)
def test_every_type(kind):
    assert parse_dependency(f"{kind}:7").terms == ((kind, (7,)),)


def test_singleton_and_case():
    assert parse_dependency("singleton").terms == (("singleton", ()),)
    assert parse_dependency("SINGLETON").terms == (("singleton", ()),)
    assert parse_dependency("AfterOK:5").terms == (("afterok", (5,)),)
    assert str(parse_dependency("singleton,afterany:4")) == "singleton,afterany:4"


def test_after_time_suffix_is_accepted_and_ignored():
    assert parse_dependency("after:123+5:124").terms == (("after", (123, 124)),)


@pytest.mark.parametrize(
    "text",
    ["", "afterok:1,afterany:2?after:3", "afterok", "afterok:", "afterok:x", "foo:1",
     "afterok:1+5", "afterok:1,,afterany:2", "afterok:1?", "afterok::1", "singleton:1",
     "after:1+", "afterok:-1"],
)
def test_rejected(text):
    with pytest.raises(ValueError) as exc:
        parse_dependency(text)
    assert str(exc.value) == MSG


def test_sbatch_and_srun_report_it_like_the_controller():
    spec, _ = parse_options(["-d", "afterok:12", "job.sh"], now=0)
    assert spec.dependency.terms == (("afterok", (12,)),)
    with pytest.raises(OptionError) as exc:
        parse_options(["--dependency=afterok:1?afterany:2,afterok:3"], now=0)
    assert exc.value.text == "sbatch: error: Batch job submission failed: Job dependency problem"
    with pytest.raises(OptionError) as exc:
        parse_options(["--dependency=nope:1", "hostname"], prog="srun", now=0)
    assert exc.value.text == "srun: error: Unable to allocate resources: Job dependency problem"


_term = st.tuples(st.sampled_from(TYPES), st.lists(st.integers(1, 10**7), min_size=1, max_size=4))


@given(st.lists(_term, min_size=1, max_size=5), st.booleans())
def test_text_round_trip(terms, any_of):
    text = ("?" if any_of else ",").join(f"{k}:{':'.join(map(str, ids))}" for k, ids in terms)
    dep = parse_dependency(text)
    assert dep.terms == tuple((k, tuple(ids)) for k, ids in terms)
    assert str(dep) == text
