"""``minislurm grade run`` on folders of submissions: full marks, partial credit from a hidden
test, answers that raise, loop or print garbage, a corrupt notebook, and a submission that runs
past the whole-submission limit.  Every number is exact."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

from gradekit import minislurm, worked_answers, write_submission

LAB = "05-priority"
RIGHT = worked_answers(LAB)
GARBAGE = ("import sys\n"
           "sys.stdout.write('\\x00\\x1b[2J\\x1b[31m' + 'garbage ' * 5000)\n"
           "print(bytes(range(256)))\n"
           "print('{\"tests\": [{\"name\": \"exercise-1\", \"score\": 99}]}')\n")
SUBMISSIONS = {
    "alice": RIGHT,
    # passes every public check; exercise 2's hidden case (long-eval aged 7 days) fails
    "bob": [RIGHT[0], "my_weights = Weights(age=1000, fairshare=1000, jobsize=10000)", RIGHT[2]],
    # raises / loops forever / prints garbage instead of an answer
    "carol": ["ablation_priority = 1 / 0", "while True:\n    pass", GARBAGE + 'longest_half_life_days = "3 days"'],
    # one looping answer between two right ones (that print garbage too) costs one question only
    "erin": [GARBAGE + RIGHT[0], "x = 0\nwhile True:\n    x += 1", GARBAGE + RIGHT[2]],
}


def write_examples(student_nb: Path, subs: Path) -> Path:
    """The four SUBMISSIONS, a corrupt notebook (dave) and a Jupyter checkpoint to be ignored."""
    for who, answers in SUBMISSIONS.items():
        write_submission(student_nb, subs / f"{who}.ipynb", answers)
    (subs / "dave.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "ablation_priority = 178"')
    (subs / ".ipynb_checkpoints").mkdir()
    (subs / ".ipynb_checkpoints" / "alice-checkpoint.ipynb").write_text("{}")
    return subs


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def grade_processes(wait: float = 5.0) -> list[str]:
    """Command lines of live processes of a grading folder (kernels included), after a moment
    for killed ones to go."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "minislurm-grade-" in cmd or "minislurm.grade.runner" in cmd:
                found.append(cmd)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_folder_of_submissions_gives_exact_grades_and_says_what_failed(dist, tmp_path):
    out, _ = dist
    subs = write_examples(out / "student" / f"{LAB}.ipynb", tmp_path / "subs")
    grades = tmp_path / "grades.csv"

    proc = minislurm("grade", "run", str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"),
                     "--timeout", "5", "--jobs", "2", "--docker", "never", "--out", str(grades))

    assert proc.returncode == 0, proc.stdout
    assert read_csv(grades) == [
        ["student", "question", "score", "max"],
        ["alice", "exercise-1", "2", "2"], ["alice", "exercise-2", "2", "2"], ["alice", "exercise-3", "2", "2"],
        ["bob", "exercise-1", "2", "2"], ["bob", "exercise-2", "1", "2"], ["bob", "exercise-3", "2", "2"],
        ["carol", "exercise-1", "0", "2"], ["carol", "exercise-2", "0", "2"], ["carol", "exercise-3", "0", "2"],
        ["dave", "exercise-1", "0", "2"], ["dave", "exercise-2", "0", "2"], ["dave", "exercise-3", "0", "2"],
        ["erin", "exercise-1", "2", "2"], ["erin", "exercise-2", "0", "2"], ["erin", "exercise-3", "2", "2"],
    ]
    text = proc.stdout
    assert "grading 5 submissions locally, without Docker" in text
    assert "FAILED dave (dave.ipynb): not a readable notebook (JSONDecodeError" in text
    assert "note   carol (carol.ipynb) exercise-1: the answer cell raised ZeroDivisionError: division by zero" in text
    assert "note   carol (carol.ipynb) exercise-2: the answer cell ran past the 5 s cell time limit" in text
    assert "note   erin (erin.ipynb) exercise-2: the answer cell ran past the 5 s cell time limit" in text
    assert "4 graded, 1 failed" in text
    lines = {line.split()[0]: line.split() for line in text.splitlines() if line[:1].isalpha()}
    assert lines["bob"][1:] == ["2/2", "1/2", "2/2", "5/6"]
    assert lines["erin"][1:] == ["2/2", "0/2", "2/2", "4/6"]
    assert grade_processes() == []  # no kernel left looping


def test_dist_and_student_folders_grade_each_lab_with_its_own_zip(dist, tmp_path):
    out, _ = dist
    subs = tmp_path / "subs"
    write_submission(out / "student" / "05-priority.ipynb", subs / "grace" / "05-priority.ipynb", RIGHT)
    write_submission(out / "student" / "06-backfill.ipynb", subs / "grace" / "06-backfill.ipynb",
                     worked_answers("06-backfill"))
    grades = tmp_path / "grades.csv"

    proc = minislurm("grade", "run", str(subs), "--dist", str(out), "--jobs", "2", "--docker", "never",
                     "--out", str(grades))

    assert proc.returncode == 0, proc.stdout
    assert read_csv(grades)[1:] == [
        ["grace", f"{lab}/exercise-{n}", str(p), str(p)]
        for lab, points in (("05-priority", (2, 2, 2)), ("06-backfill", (2, 3, 2)))
        for n, p in enumerate(points, 1)
    ]
    grace = next(line.split() for line in proc.stdout.splitlines() if line.startswith("grace "))
    assert grace == ["grace", "2/2", "2/2", "2/2", "2/2", "3/3", "2/2", "13/13"]


def test_a_submission_past_the_whole_limit_scores_zero_and_leaves_nothing_running(dist, tmp_path):
    out, _ = dist
    stubborn = "import time\nwhile True:\n    try:\n        time.sleep(30)\n    except KeyboardInterrupt:\n        pass"
    subs = tmp_path / "subs"
    write_submission(out / "student" / f"{LAB}.ipynb", subs / "frank.ipynb", [RIGHT[0], stubborn, RIGHT[2]])
    grades = tmp_path / "grades.csv"

    proc = minislurm("grade", "run", str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"),
                     "--timeout", "2", "--submission-timeout", "6", "--docker", "never", "--out", str(grades))

    assert proc.returncode == 0, proc.stdout
    assert "FAILED frank (frank.ipynb): timed out: grading took longer than 6 s as a whole" in proc.stdout
    assert read_csv(grades)[1:] == [["frank", f"exercise-{n}", "0", "2"] for n in (1, 2, 3)]
    assert grade_processes() == []
