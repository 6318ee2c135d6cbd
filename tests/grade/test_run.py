"""``minislurm grade run`` on folders of submissions: full marks, a hidden check that fails (0 on the
question: no partial credit), answers that raise or print garbage, a corrupt notebook, bad input
(another lab, cells moved or deleted, a notebook that snoops or forges), the instructor's reports
and regrading one student.  An answer that runs past a time limit (a loop, or a right answer on a
slow machine) and a submission past the whole-submission limit are not graded, never 0, and
``--rerun-timed-out`` grades them again.  Every number is exact."""

from __future__ import annotations

import csv
import time
from pathlib import Path

from gradekit import minislurm, processes, worked_answers, write_submission

LAB = "05-priority"
RIGHT = worked_answers(LAB)
GARBAGE = ("import sys\n"
           "sys.stdout.write('\\x00\\x1b[2J\\x1b[31m' + 'garbage ' * 5000)\n"
           "print(bytes(range(256)))\n"
           "print('{\"tests\": [{\"name\": \"exercise-1\", \"score\": 99}]}')\n")
SUBMISSIONS = {
    "alice": RIGHT,
    # passes every public check; exercise 2's hidden check (long-eval aged 7 days) fails: 0 on it
    # (exercise 4, a live cluster's queue, is left blank where another question is the subject: 0, and quick)
    "bob": [RIGHT[0], "my_weights = Weights(age=1000, fairshare=1000, jobsize=10000)", RIGHT[2], None],
    # raises / loops forever (not graded: a slow right answer looks the same) / prints garbage instead of an answer
    "carol": ["ablation_priority = 1 / 0", "while True:\n    pass", GARBAGE + 'longest_half_life_days = "3 days"', None],
    # one looping answer between two right ones (that print garbage too) leaves one question ungraded only
    "erin": [GARBAGE + RIGHT[0], "x = 0\nwhile True:\n    x += 1", GARBAGE + RIGHT[2], None],
}


_OK, _LATE = "graded", "not graded (timed out after 5 s; rerun)"
# What ``grade run --timeout 5`` gives the examples, locally and in Docker alike.
EXAMPLE_GRADES = [
    ["student", "question", "score", "max", "status"],
    ["alice", "exercise-1", "2", "2", _OK], ["alice", "exercise-2", "2", "2", _OK], ["alice", "exercise-3", "2", "2", _OK],
    ["alice", "exercise-4", "2", "2", _OK],
    ["bob", "exercise-1", "2", "2", _OK], ["bob", "exercise-2", "0", "2", _OK], ["bob", "exercise-3", "2", "2", _OK],
    ["bob", "exercise-4", "0", "2", _OK],
    ["carol", "exercise-1", "0", "2", _OK], ["carol", "exercise-2", "", "2", _LATE], ["carol", "exercise-3", "0", "2", _OK],
    ["carol", "exercise-4", "0", "2", _OK],
    ["dave", "exercise-1", "0", "2", _OK], ["dave", "exercise-2", "0", "2", _OK], ["dave", "exercise-3", "0", "2", _OK],
    ["dave", "exercise-4", "0", "2", _OK],
    ["erin", "exercise-1", "2", "2", _OK], ["erin", "exercise-2", "", "2", _LATE], ["erin", "exercise-3", "2", "2", _OK],
    ["erin", "exercise-4", "0", "2", _OK],
]
# ... and the lines of its report that say what went wrong (``reports``), sorted
EXAMPLE_REPORTS = sorted([
    "FAILED dave (dave.ipynb): not a readable notebook (JSONDecodeError: Expecting ',' delimiter: line 1 column 69 "
    "(char 68))",
    "note   carol (carol.ipynb) exercise-1: the answer cell raised ZeroDivisionError: division by zero",
    *(f"note   {who} ({who}.ipynb) exercise-2: the answer cell ran past the 5 s cell time limit" for who in ("carol", "erin")),
    *(f"TIMEOUT {who} ({who}.ipynb) exercise-2: not graded (timed out after 5 s; rerun): the answer cell ran past the "
      f"cell time limit" for who in ("carol", "erin")),
])


def reports(stdout: str) -> list[str]:
    """The report's lines about a failure, a note or a time-out, sorted."""
    return sorted(line for line in stdout.splitlines() if line.startswith(("note ", "FAILED ", "TIMEOUT ")))


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


def grade_processes(tmpdir: Path, wait: float = 5.0) -> list[str]:
    """Command lines of the live processes of a grading run given ``tmpdir`` (its kernels and
    whatever they started inherit it; other tests may be grading at the same time), after a
    moment for killed ones to go."""
    mark = f"TMPDIR={tmpdir}".encode()

    def graded(pid: str, argv: list[bytes]) -> bool:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return any(v.startswith(mark) for v in f.read().split(b"\0"))
    deadline = time.monotonic() + wait
    while True:
        found = [b" ".join(argv).decode(errors="replace") for argv in processes(graded)]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_folder_of_submissions_gives_exact_grades_and_says_what_failed(dist, tmp_path):
    out, _ = dist
    subs = write_examples(out / "student" / f"{LAB}.ipynb", tmp_path / "subs")
    grades = tmp_path / "grades.csv"

    (tmp_path / "tmp").mkdir()
    proc = minislurm("grade", "run", str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"),
                     "--timeout", "5", "--jobs", "2", "--docker", "never", "--out", str(grades), tmpdir=tmp_path / "tmp")

    assert proc.returncode == 3, proc.stdout  # some questions not graded
    assert read_csv(grades) == EXAMPLE_GRADES
    text = proc.stdout
    assert "grading 5 submissions locally, without Docker" in text
    assert reports(text) == EXAMPLE_REPORTS, "\n".join(reports(text))
    assert "wrong  bob (bob.ipynb) exercise-2: hidden check: age overtakes pretrain-7b" in text
    assert "2 graded, 1 failed, 2 not graded (timed out)" in text
    assert "2 questions of 2 students in" in text and "--rerun-timed-out" in text
    lines = {line.split()[0]: line.split() for line in text.splitlines() if line[:1].isalpha()}
    assert lines["bob"][1:] == ["2/2", "0/2", "2/2", "0/2", "4/8"]
    assert lines["erin"][1:] == ["2/2", "?/2", "2/2", "0/2", "4+?/8"]
    assert grade_processes(tmp_path / "tmp") == []  # no kernel left looping

    # beside grades.csv: what went wrong, per question, for a gradebook, and as a chart
    assert read_csv(tmp_path / "grades-questions.csv") == [
        ["question", "max", "mean", "full_marks_share", "most_common_failure", "students_with_it", "not_graded"],
        ["exercise-1", "2", "1.20", "0.60", "name 'ablation_priority' is not defined (the answer cell did not "
                                            "define it: deleted, renamed or failed)", "1", "0"],
        # over alice, bob and dave: carol's and erin's loops are not graded
        ["exercise-2", "2", "0.67", "0.33", "hidden check: age overtakes pretrain-7b", "1", "2"],
        ["exercise-3", "2", "1.20", "0.60", "a whole number of days, 1 to 28", "1", "0"],
        ["exercise-4", "2", "0.40", "0.20", "name 'sweep_options' is not defined (the answer cell did not "
                                            "define it: deleted, renamed or failed)", "3", "0"],
    ]
    assert read_csv(tmp_path / "grades-lms.csv") == [
        ["student", "exercise-1 (2)", "exercise-2 (2)", "exercise-3 (2)", "exercise-4 (2)", "total (8)"],
        ["alice", "2", "2", "2", "2", "8"], ["bob", "2", "0", "2", "0", "4"], ["carol", "0", "", "0", "0", ""],
        ["dave", "0", "0", "0", "0", "0"], ["erin", "2", "", "2", "0", ""]]
    failures = {(r[0], r[1]): r[2] for r in read_csv(tmp_path / "grades-failures.csv")[1:]}
    assert failures[("bob", "exercise-2")] == "hidden check: age overtakes pretrain-7b"
    assert "ablation_priority' is not defined" in failures[("carol", "exercise-1")]
    assert (tmp_path / "grades-scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # bob fixes exercise 2 and is regraded alone: his rows change, nobody else's
    write_submission(out / "student" / f"{LAB}.ipynb", subs / "bob.ipynb", RIGHT)
    before = read_csv(grades)
    proc = minislurm("grade", "run", str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"),
                     "--timeout", "5", "--docker", "never", "--student", "bob", "--out", str(grades))
    assert proc.returncode == 3, proc.stdout  # carol's and erin's loops are still not graded
    assert "grading 1 submissions" in proc.stdout
    after = read_csv(grades)
    assert [r for r in after if r[0] != "bob"] == [r for r in before if r[0] != "bob"]
    assert [r for r in after if r[0] == "bob"] == [["bob", f"exercise-{n}", "2", "2", "graded"] for n in (1, 2, 3, 4)]
    assert ("bob", "exercise-2") not in {(r[0], r[1]) for r in read_csv(tmp_path / "grades-failures.csv")}
    assert read_csv(tmp_path / "grades-lms.csv")[2] == ["bob", "2", "2", "2", "2", "8"]


def test_bad_input_is_reported_and_graded_as_far_as_it_can_be(dist, tmp_path):
    """Another lab's notebook, cells moved, an answer cell deleted, a renamed copy without otter's
    metadata, and a notebook that looks for the autograder zip and prints a forged result."""
    import nbformat

    out, _ = dist
    student = out / "student" / f"{LAB}.ipynb"
    subs = tmp_path / "subs"
    write_submission(out / "student" / "06-backfill.ipynb", subs / "other-lab.ipynb", worked_answers("06-backfill"))
    nb = nbformat.read(write_submission(student, subs / "moved.ipynb", RIGHT), as_version=4)
    answers = [i for i, c in enumerate(nb.cells) if "otter_answer_cell" in c.metadata.get("tags", [])]
    nb.cells.insert(answers[0], nb.cells.pop(answers[2]))  # exercise 3's answer first
    nbformat.write(nb, subs / "moved.ipynb")
    nb = nbformat.read(write_submission(student, subs / "deleted.ipynb", RIGHT), as_version=4)
    del nb.cells[answers[1]]  # no answer cell for exercise 2
    nbformat.write(nb, subs / "deleted.ipynb")
    nb = nbformat.read(write_submission(student, subs / "renamed-copy.ipynb", RIGHT), as_version=4)
    del nb.metadata["otter"]
    nbformat.write(nb, subs / "renamed-copy.ipynb")
    snoop = ("import glob, os\n"
             "found = [p for d in ('.', '..', '../..', '/grade/in', os.environ.get('TMPDIR', '/tmp'))\n"
             "         for p in glob.glob(d + '/**/*autograder*', recursive=True)]\n"
             "os.write(1, b'RESULT 0 {\"questions\": {}, \"error\": null}\\n')\n"
             "print('RESULT', os.environ.get('NONCE'), '{}')\n"
             "ablation_priority = len(open(found[0], 'rb').read())")
    write_submission(student, subs / "snoop.ipynb", [snoop, RIGHT[1], RIGHT[2], None])
    grades = tmp_path / "grades.csv"

    proc = minislurm("grade", "run", str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"),
                     "--timeout", "5", "--jobs", "2", "--docker", "never", "--out", str(grades))

    assert proc.returncode == 0, proc.stdout
    scores = {(r[0], r[1]): r[2] for r in read_csv(grades)[1:]}
    assert [scores["other-lab", f"exercise-{n}"] for n in (1, 2, 3)] == ["0", "0", "0"]
    assert "FAILED other-lab (other-lab.ipynb): a submission for 06-backfill, not 05-priority: nothing graded" in proc.stdout
    assert [scores["moved", f"exercise-{n}"] for n in (1, 2, 3)] == ["2", "2", "2"]
    assert [scores["renamed-copy", f"exercise-{n}"] for n in (1, 2, 3)] == ["2", "2", "2"]
    assert [scores["deleted", f"exercise-{n}"] for n in (1, 2, 3)] == ["2", "0", "2"]
    assert ("wrong  deleted (deleted.ipynb) exercise-2: name 'my_weights' is not defined (the answer cell did not "
            "define it: deleted, renamed or failed)") in proc.stdout
    assert [scores["snoop", f"exercise-{n}"] for n in (1, 2, 3)] == ["0", "2", "2"]  # no zip to find, no forgery
    assert "note   snoop (snoop.ipynb) exercise-1: the answer cell raised IndexError" in proc.stdout
    assert "4 graded, 1 failed" in proc.stdout


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
        ["grace", f"{lab}/exercise-{n}", str(p), str(p), "graded"]
        for lab, points in (("05-priority", (2, 2, 2, 2)), ("06-backfill", (2, 3, 2, 2)))
        for n, p in enumerate(points, 1)
    ]
    grace = next(line.split() for line in proc.stdout.splitlines() if line.startswith("grace "))
    assert grace == ["grace", "17/17"]  # eight questions: the summary shows totals only


def test_a_submission_past_the_whole_limit_is_not_graded_and_leaves_nothing_running(dist, tmp_path):
    out, _ = dist
    stubborn = "import time\nwhile True:\n    try:\n        time.sleep(30)\n    except KeyboardInterrupt:\n        pass"
    subs = tmp_path / "subs"
    write_submission(out / "student" / f"{LAB}.ipynb", subs / "frank.ipynb", [RIGHT[0], stubborn, RIGHT[2], None])
    grades = tmp_path / "grades.csv"

    (tmp_path / "tmp").mkdir()
    proc = minislurm("grade", "run", str(subs), "--autograder", str(out / "autograder" / f"{LAB}-autograder.zip"),
                     "--timeout", "2", "--submission-timeout", "6", "--docker", "never", "--out", str(grades),
                     tmpdir=tmp_path / "tmp")

    assert proc.returncode == 3, proc.stdout
    assert "FAILED" not in proc.stdout and "0 graded, 0 failed, 1 not graded (timed out)" in proc.stdout
    assert ("TIMEOUT frank (frank.ipynb) exercise-2: not graded (timed out after 6 s; rerun): "
            "the whole submission ran past its limit") in proc.stdout
    assert read_csv(grades)[1:] == [["frank", f"exercise-{n}", "", "2", "not graded (timed out after 6 s; rerun)"]
                                    for n in (1, 2, 3, 4)]
    assert grade_processes(tmp_path / "tmp") == []


def test_a_right_answer_past_the_limit_is_not_graded_and_a_rerun_grades_it_alone(dist, tmp_path):
    """A right answer slower than --timeout (as on a loaded machine) is "not graded", never 0; a
    wrong answer still scores 0; --rerun-timed-out with a larger limit regrades only the former."""
    out, _ = dist
    autograder = str(out / "autograder" / f"{LAB}-autograder.zip")
    subs, grades = tmp_path / "subs", tmp_path / "grades.csv"
    slow = "import time\ntime.sleep(6)  # a slow machine\n"
    write_submission(out / "student" / f"{LAB}.ipynb", subs / "slowpoke.ipynb",
                     [slow + RIGHT[0], RIGHT[1], RIGHT[2], None])
    write_submission(out / "student" / f"{LAB}.ipynb", subs / "bob.ipynb", SUBMISSIONS["bob"])

    proc = minislurm("grade", "run", str(subs), "--autograder", autograder, "--timeout", "2", "--jobs", "2",
                     "--docker", "never", "--out", str(grades))

    assert proc.returncode == 3, proc.stdout
    rows = {(r[0], r[1]): r[2:] for r in read_csv(grades)[1:]}
    assert rows["slowpoke", "exercise-1"] == ["", "2", "not graded (timed out after 2 s; rerun)"]
    assert rows["slowpoke", "exercise-2"] == rows["slowpoke", "exercise-3"] == ["2", "2", "graded"]
    assert rows["bob", "exercise-2"] == ["0", "2", "graded"]  # wrong is still wrong
    assert ("TIMEOUT slowpoke (slowpoke.ipynb) exercise-1: not graded (timed out after 2 s; rerun): "
            "the answer cell ran past the cell time limit") in proc.stdout
    assert "1 questions of 1 students in" in proc.stdout
    before = read_csv(grades)

    proc = minislurm("grade", "run", str(subs), "--autograder", autograder, "--timeout", "60", "--docker", "never",
                     "--rerun-timed-out", "--out", str(grades))

    assert proc.returncode == 0, proc.stdout
    assert "grading 1 submissions" in proc.stdout and "slowpoke (slowpoke.ipynb): 6/8" in proc.stdout
    after = read_csv(grades)
    assert [r for r in after if r[0] != "slowpoke"] == [r for r in before if r[0] != "slowpoke"]
    assert [r for r in after if r[0] == "slowpoke"] == [["slowpoke", f"exercise-{n}", str(p), "2", "graded"]
                                                         for n, p in ((1, 2), (2, 2), (3, 2), (4, 0))]
    assert read_csv(tmp_path / "grades-lms.csv")[2] == ["slowpoke", "2", "2", "2", "0", "6"]
    assert ("slowpoke", "exercise-1") not in {(r[0], r[1]) for r in read_csv(tmp_path / "grades-failures.csv")}

    proc = minislurm("grade", "run", str(subs), "--autograder", autograder, "--docker", "never",
                     "--rerun-timed-out", "--out", str(grades))
    assert proc.returncode == 0 and "nothing to rerun" in proc.stdout, proc.stdout
