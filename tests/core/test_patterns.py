"""sbatch filename patterns (man page, FILENAME PATTERN; job_array.html, File Names)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minislurm.core.patterns import default_output, expand_pattern, step_io

JOB = dict(job_id=128, job_name="train", user="alice")


def expand(pattern, **kw):
    return expand_pattern(pattern, **{**JOB, **kw})


def test_man_page_padding_examples():
    assert expand("job%4j.out") == "job0128.out"
    assert expand("job%2j-%2t.out") == "job128-00.out"


def test_non_array_job_array_patterns():
    assert expand("%A_%a") == "128_4294967294"
    assert expand(default_output(array=False)) == "slurm-128.out"


def test_array_task():
    kw = dict(job_id=125, array_job_id=120, array_task_id=5)
    assert expand(default_output(array=True), **kw) == "slurm-120_5.out"
    assert expand("%j %A %a %b %3a", **kw) == "125 120 5 5 005"
    assert expand("%b", job_id=9, array_job_id=1, array_task_id=17) == "7"


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("%x-%j.out", "train-128.out"),
        ("%u/%x", "alice/train"),
        ("%N-%n-%t", "gpu01-1-3"),
        ("%r", "2"),
        ("%J", "128"),
        ("100%%", "100%"),
        ("%%j", "%j"),
        ("%%%j", "%128"),
        ("%12j", "0000000128"),  # width is capped at 10
        ("%0j", "128"),
    ],
)
def test_letters(pattern, expected):
    assert expand(pattern, node="gpu01", node_index=1, task_id=3, restart_count=2) == expected


def test_step_patterns():
    assert expand("%J", step_id=3) == "128.3"
    assert expand("%s", step_id=3) == "3"
    assert expand("%s") == "4294967291"  # the batch step


def test_backslash_turns_replacement_off():
    assert expand("job\\%j.out") == "job%j.out"
    assert expand("a\\\\b%j") == "a\\b%j"


def test_unknown_letters_and_dangling_widths():
    assert expand("%q.out") == "%q.out"
    assert expand("%4q.out") == "4q.out"
    assert expand("job%12") == "job2"
    assert expand("end%") == "end%"


def test_default_output():
    assert default_output(False) == "slurm-%j.out"
    assert default_output(True) == "slurm-%A_%a.out"


@given(st.text(alphabet=st.characters(blacklist_characters="%\\"), max_size=40))
def test_text_without_patterns_is_unchanged(text):
    assert expand(text) == text


@given(st.integers(0, 10**9), st.integers(0, 10))
def test_width_zero_pads(job_id, width):
    assert expand(f"%{width}j", job_id=job_id) == str(job_id).zfill(width)


@pytest.mark.parametrize("value,kind", [
    (None, "relay"), ("/dev/null", "none"), ("3", "task"), ("out.txt", "file"), ("o-%j.%s-%x", "file"),
    ("o-%t", "tasks"), ("o-%4t", "tasks"), ("%n.out", "tasks"), ("o-%N", "tasks"),
    ("o-%%t", "file"), ("o\\%t", "file")])
def test_srun_opens_a_file_per_task_only_for_t_n_and_N(value, kind):
    assert step_io(value) == kind
