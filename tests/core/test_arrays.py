"""--array index expressions, against the sbatch man page and job_array.html examples."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minislurm.core.arrays import parse_array
from minislurm.core.options import OptionError, parse_options

MSG = "Invalid job array specification"


@pytest.mark.parametrize(
    "text, indices",
    [
        ("0-15", tuple(range(16))),
        ("0,6,16-32", (0, 6, *range(16, 33))),
        ("0-15:4", (0, 4, 8, 12)),
        ("1-7:2", (1, 3, 5, 7)),
        ("1,3,5,7", (1, 3, 5, 7)),
        ("7", (7,)),
        ("3,1,1", (1, 3)),  # a bitmap: sorted, no duplicates
        ("10-12,0-1", (0, 1, 10, 11, 12)),
    ],
)
def test_man_page_forms(text, indices):
    spec = parse_array(text)
    assert spec.indices == indices
    assert spec.max_running is None
    assert spec.text == text


def test_throttle():
    spec = parse_array("0-15%4")
    assert spec.indices == tuple(range(16))
    assert spec.max_running == 4


def test_combination_of_list_step_and_throttle():
    spec = parse_array("1,3,5-11:2%3")
    assert spec.indices == (1, 3, 5, 7, 9, 11)
    assert spec.max_running == 3


def test_zero_throttle_means_no_limit():
    assert parse_array("0-3%0").max_running is None


def test_max_array_size_bound_is_exclusive():
    assert parse_array("1000").indices == (1000,)
    with pytest.raises(ValueError) as exc:
        parse_array("1001")
    assert str(exc.value) == MSG
    assert parse_array("0-9", max_array_size=10).indices == tuple(range(10))
    with pytest.raises(ValueError, match=f"^{MSG}$"):
        parse_array("0-10", max_array_size=10)


@pytest.mark.parametrize(
    "text",
    ["", "-1", "5-1", "0-10:0", "a", "1,,2", ",1", "0-15%", "0-15%x", "0-5%4%2", "1:2", " 1",
     "1-", "0-4:", "1.5", "\uff11"],
)
def test_invalid(text):
    with pytest.raises(ValueError) as exc:
        parse_array(text)
    assert str(exc.value) == MSG


def test_sbatch_option_and_its_rejection_text():
    spec, _ = parse_options(["--array=0-3%2", "job.sh"], now=0)
    assert spec.array.indices == (0, 1, 2, 3) and spec.array.max_running == 2
    spec, _ = parse_options(["-a", "5", "job.sh"], now=0)
    assert spec.array.indices == (5,)
    with pytest.raises(OptionError) as exc:
        parse_options(["--array=4-2"], now=0)
    assert exc.value.text == "sbatch: error: Batch job submission failed: " + MSG
    assert exc.value.exit_code == 1


@given(st.integers(0, 500), st.integers(0, 500), st.integers(1, 50))
def test_range_with_step_matches_python_range(first, span, step):
    last = first + span
    assert parse_array(f"{first}-{last}:{step}").indices == tuple(range(first, last + 1, step))
