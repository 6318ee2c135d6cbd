"""Submission discovery, question points from a zip, the CSV and the summary, and the sandbox's
time limit, without otter (each in well under a second)."""

from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from pathlib import Path

import pytest

from minislurm.grade import folder, report, sandbox
from minislurm.grade.assign import CHECKS

def make_zip(path: Path, lab: str, names=("exercise-1", "exercise-10", "exercise-2")) -> Path:
    """An autograder zip as ``grade assign`` writes it, reduced to what ``grade run`` reads."""
    questions = {n: {"points": 3, "answers": ["x"], "checks": [{"source": "assert x", "hidden": False}]}
                 for n in names}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("otter_config.json", json.dumps({"assignment_name": lab}))
        zf.writestr(CHECKS, json.dumps({"lab": lab, "questions": questions}))
    return path


def test_questions_and_points_come_from_the_zip_in_natural_order(tmp_path):
    z = make_zip(tmp_path / "lab-autograder.zip", "lab")
    assert list(folder.questions_in(z).items()) == [("exercise-1", 3), ("exercise-2", 3), ("exercise-10", 3)]
    assert folder.assignment_name(z) == "lab"


def nb(path: Path, lab: str | None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"otter": {"assignment_name": lab}} if lab else {}
    path.write_text(json.dumps({"cells": [], "metadata": meta, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_students_are_file_names_or_folders_and_labs_come_from_names_or_metadata(tmp_path):
    dist = tmp_path / "dist"
    (dist / "autograder").mkdir(parents=True)
    make_zip(dist / "autograder" / "05-priority-autograder.zip", "05-priority")
    make_zip(dist / "autograder" / "06-backfill-autograder.zip", "06-backfill")
    subs = tmp_path / "subs"
    nb(subs / "amy.ipynb", "06-backfill")
    nb(subs / "ben" / "05-priority.ipynb", None)
    nb(subs / "ben" / "my-copy.ipynb", "05-priority")  # second 05 of ben
    nb(subs / "cy.ipynb", None)
    (subs / "dee.ipynb").write_text("not json")
    nb(subs / ".ipynb_checkpoints" / "amy-checkpoint.ipynb", "06-backfill")

    found = {(s.student, s.path.name): s for s in folder.find_submissions(subs, dist=dist)}

    assert sorted(found) == [("amy", "amy.ipynb"), ("ben", "05-priority.ipynb"), ("ben", "my-copy.ipynb"),
                             ("cy", "cy.ipynb"), ("dee", "dee.ipynb")]
    assert found["amy", "amy.ipynb"].lab == "06-backfill" and found["amy", "amy.ipynb"].error is None
    assert found["ben", "05-priority.ipynb"].lab == "05-priority"
    assert "second submission of ben" in found["ben", "my-copy.ipynb"].error
    assert "cannot tell which lab" in found["cy", "cy.ipynb"].error
    assert "not a readable notebook" in found["dee", "dee.ipynb"].error


def test_csv_and_summary(tmp_path):
    sub = folder.Submission("zoe", tmp_path / "zoe.ipynb", "lab")
    bad = folder.Submission("al", tmp_path / "al.ipynb", "lab")
    graded = [folder.Graded(sub, {"exercise-2": (2.0, 2.0), "exercise-1": (0.0, 1.0)},
                            notes={"exercise-1": "the answer cell raised KeyError: 'x'"},
                            failures={"exercise-1": "x is not defined"}),
              folder.Graded(bad, {"exercise-1": (0.0, 1.0), "exercise-2": (0.0, 2.0)}, error="not a notebook",
                            failures={"exercise-1": "not a notebook", "exercise-2": "not a notebook"})]
    out = tmp_path / "g" / "grades.csv"
    report.write_grades(out, folder.rows(graded))
    assert out.read_text().splitlines() == ["student,question,score,max,status", "al,exercise-1,0,1,graded",
                                            "al,exercise-2,0,2,graded", "zoe,exercise-1,0,1,graded",
                                            "zoe,exercise-2,2,2,graded"]
    assert folder.failures(graded) == {("zoe", "exercise-1"): "x is not defined",
                                       ("al", "exercise-1"): "not a notebook", ("al", "exercise-2"): "not a notebook"}
    text = folder.summary(graded).splitlines()
    assert text[0].split() == ["student", "exercise-1", "exercise-2", "total"]
    assert text[1].split() == ["al", "0/1", "0/2", "0/3"] and text[2].split() == ["zoe", "0/1", "2/2", "2/3"]
    assert text[3:] == ["FAILED al (al.ipynb): not a notebook",
                        "note   zoe (zoe.ipynb) exercise-1: the answer cell raised KeyError: 'x'",
                        "wrong  zoe (zoe.ipynb) exercise-1: x is not defined"]


SLOW = "not graded (timed out after 3 s; rerun): the answer cell ran past the cell time limit"


def test_a_question_that_timed_out_is_not_graded_anywhere_never_zero(tmp_path):
    """A question past a time limit has no score: an empty cell and a status in grades.csv, an empty
    gradebook cell and total, no share in the means, and its own line in the summary."""
    right = folder.Graded(folder.Submission("amy", tmp_path / "amy.ipynb", "lab"),
                          {"exercise-1": (1.0, 1.0), "exercise-2": (2.0, 2.0)})
    slow = folder.Graded(folder.Submission("bo", tmp_path / "bo.ipynb", "lab"),
                         {"exercise-1": (0.0, 1.0), "exercise-2": (None, 2.0)},
                         failures={"exercise-1": "x is not defined", "exercise-2": SLOW})
    graded = [right, slow]
    assert slow.not_graded == ["exercise-2"] and right.not_graded == []
    grades = tmp_path / "grades.csv"
    report.write_reports(grades, folder.rows(graded), folder.failures(graded))

    assert grades.read_text().splitlines() == [
        "student,question,score,max,status", "amy,exercise-1,1,1,graded", "amy,exercise-2,2,2,graded",
        "bo,exercise-1,0,1,graded", "bo,exercise-2,,2,not graded (timed out after 3 s; rerun)"]
    assert report.sibling(grades, "lms").read_text().splitlines() == [
        "student,exercise-1 (1),exercise-2 (2),total (3)", "amy,1,2,3", "bo,0,,"]
    assert report.sibling(grades, "questions").read_text().splitlines() == [
        "question,max,mean,full_marks_share,most_common_failure,students_with_it,not_graded",
        "exercise-1,1,0.50,0.50,x is not defined,1,0", "exercise-2,2,2.00,1.00,,0,1"]
    assert f"bo,exercise-2,{SLOW}" in report.sibling(grades, "failures").read_text()
    back = report.read_grades(grades)
    assert ("bo", "exercise-2", None, 2.0, "not graded (timed out after 3 s; rerun)") in back
    assert report.ungraded(back) == [("bo", "exercise-2", None, 2.0, "not graded (timed out after 3 s; rerun)")]

    text = folder.summary(graded).splitlines()
    assert text[2].split() == ["bo", "0/1", "?/2", "0+?/3"]
    assert text[3:] == ["wrong  bo (bo.ipynb) exercise-1: x is not defined", f"TIMEOUT bo (bo.ipynb) exercise-2: {SLOW}"]


def test_a_rerun_replaces_only_the_rows_it_regraded(tmp_path):
    old = [("amy", "exercise-1", 1.0, 1.0, "graded"), ("bo", "exercise-1", 0.0, 1.0, "graded"),
           ("bo", "exercise-2", None, 2.0, "not graded (timed out after 3 s; rerun)")]
    old_fail = {("bo", "exercise-1"): "x is not defined", ("bo", "exercise-2"): SLOW}
    new = [("bo", "exercise-1", 1.0, 1.0, "graded"), ("bo", "exercise-2", 2.0, 2.0, "graded")]
    rows, fails = report.merge(old, old_fail, new, {})
    assert sorted(rows) == [("amy", "exercise-1", 1.0, 1.0, "graded"), *new] and fails == {}
    assert report.ungraded(rows) == []


def test_an_old_grades_csv_without_status_reads_as_graded(tmp_path):
    (tmp_path / "g.csv").write_text("student,question,score,max\namy,exercise-1,1,2\n")
    assert report.read_grades(tmp_path / "g.csv") == [("amy", "exercise-1", 1.0, 2.0, "graded")]


def test_the_submissions_to_rerun_are_those_with_a_question_not_graded(tmp_path):
    dist = tmp_path / "dist"
    (dist / "autograder").mkdir(parents=True)
    make_zip(dist / "autograder" / "05-priority-autograder.zip", "05-priority", names=("exercise-1",))
    make_zip(dist / "autograder" / "06-backfill-autograder.zip", "06-backfill", names=("exercise-1",))
    for who in ("amy", "bo"):
        for lab in ("05-priority", "06-backfill"):
            nb(tmp_path / "subs" / who / f"{lab}.ipynb", lab)
    subs = folder.find_submissions(tmp_path / "subs", dist=dist)
    again = folder.timed_out_submissions(subs, {("bo", "06-backfill/exercise-1")})
    assert [(s.student, s.lab) for s in again] == [("bo", "06-backfill")]
    # the labels are those of the whole run, so a regraded lab keeps its prefix
    assert folder.question_label(folder.labs_of(subs), "06-backfill", "exercise-1") == "06-backfill/exercise-1"


class FakeSandbox(sandbox.LocalSandbox):
    """Runs a script instead of the grader: it starts a child in a session of its own (as
    jupyter_client starts kernels) and then sleeps or writes a result."""

    def __init__(self, script: str):
        self.script = script

    def command(self, work, tag):
        return [sys.executable, "-c", "import json, sys; NONCE = json.loads(sys.stdin.readline())['nonce']\n" + self.script]


SPAWN = ("import subprocess, sys, time\n"
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # minislurm-fake-kernel'],"
         " start_new_session=True)\n")


def fake_kernels(marker: bytes = b"minislurm-fake-kernel", wait: float = 5.0) -> list[str]:
    deadline = time.monotonic() + wait
    while True:
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if marker in open(f"/proc/{pid}/cmdline", "rb").read():
                    out.append(pid)
            except OSError:
                pass
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="process tree from /proc")
def test_past_the_whole_limit_the_runner_and_its_detached_kernel_are_killed(tmp_path):
    (tmp_path / "s.ipynb").write_text("{}")
    box = FakeSandbox(SPAWN + "time.sleep(60)")
    t0 = time.monotonic()
    outcome = sandbox.run_one(box, tmp_path / "s.ipynb", make_zip(tmp_path / "z.zip", "lab"), cell_timeout=1, total_timeout=1.5)
    assert time.monotonic() - t0 < 10
    assert outcome.error == "timed out: grading took longer than 1.5 s as a whole" and outcome.timed_out == 1.5
    assert fake_kernels() == []


def test_a_submission_past_the_whole_limit_is_not_graded_not_scored_zero(tmp_path):
    (tmp_path / "s.ipynb").write_text("{}")
    sub = folder.Submission("cy", tmp_path / "s.ipynb", "lab", make_zip(tmp_path / "z.zip", "lab", names=("exercise-1",)))
    g = folder.grade_one(FakeSandbox("import time; time.sleep(60)"), sub, cell_timeout=1, total_timeout=1.5)
    assert g.scores == {"exercise-1": (None, 3.0)} and g.error is None and g.not_graded == ["exercise-1"]
    assert g.failures == {"exercise-1": "not graded (timed out after 1.5 s; rerun): the whole submission ran past its limit"}


def test_a_question_the_runner_did_not_grade_for_time_stays_not_graded(tmp_path):
    (tmp_path / "s.ipynb").write_text("{}")
    sub = folder.Submission("cy", tmp_path / "s.ipynb", "lab", make_zip(tmp_path / "z.zip", "lab", names=("q", "r")))
    said = {"questions": {"q": {"score": None, "possible": 3, "failed": [SLOW], "timed_out": 3},
                          "r": {"score": 0, "possible": 3, "failed": ["wrong"], "timed_out": None}}, "error": None}
    g = folder.grade_one(FakeSandbox(f"print('RESULT', NONCE, json.dumps({said!r}))"), sub, cell_timeout=3,
                         total_timeout=30)
    assert g.scores == {"q": (None, 3.0), "r": (0.0, 3.0)} and g.failures == {"q": SLOW, "r": "wrong"}


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="process command lines from /proc")
def test_a_kernel_orphaned_by_a_finished_runner_is_killed(tmp_path):
    (tmp_path / "s.ipynb").write_text("{}")
    orphan = ("import subprocess, sys\n"  # like a kernel: a session of its own, a file of the folder
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # minislurm-fake-orphan',"
              " __import__('os').getcwd()], start_new_session=True)\n")
    sandbox.run_one(FakeSandbox(orphan), tmp_path / "s.ipynb", make_zip(tmp_path / "z.zip", "lab"), cell_timeout=1,
                    total_timeout=30)
    assert fake_kernels(b"minislurm-fake-orphan") == []


def test_a_result_is_read_back_and_a_silent_crash_is_reported(tmp_path):
    (tmp_path / "s.ipynb").write_text("{}")
    ok = FakeSandbox("print('RESULT', NONCE, json.dumps({'questions': {'q': {'score': 1, 'possible': 1}}, 'error': None}))")
    outcome = sandbox.run_one(ok, tmp_path / "s.ipynb", make_zip(tmp_path / "z.zip", "lab"), cell_timeout=1, total_timeout=30)
    assert outcome.error is None and outcome.result["questions"]["q"]["score"] == 1
    crash = FakeSandbox("print('boom'); raise SystemExit(3)")
    outcome = sandbox.run_one(crash, tmp_path / "s.ipynb", make_zip(tmp_path / "z.zip", "lab"), cell_timeout=1, total_timeout=30)
    assert outcome.error == "the grader exited with status 3 and no result: boom"


def test_docker_is_used_only_when_an_engine_answers(monkeypatch):
    monkeypatch.setattr(sandbox, "docker_ready", lambda image: False)
    assert isinstance(sandbox.choose("img"), sandbox.LocalSandbox)
    with pytest.raises(RuntimeError, match="no Docker engine"):
        sandbox.choose("img", docker="always")
    monkeypatch.setattr(sandbox, "docker_ready", lambda image: True)
    box = sandbox.choose("img")
    assert isinstance(box, sandbox.DockerSandbox)
    cmd = box.command(Path("/w"), "tag1")
    assert cmd[:6] == ["docker", "run", "--rm", "-i", "--name", "tag1"]
    assert "-v" not in cmd  # nothing mounted: the notebook and the checks come on stdin
    for flag in (["--network", "none"], ["--read-only"], ["--memory", "2g"]):
        assert any(cmd[i:i + len(flag)] == flag for i in range(len(cmd)))
    assert cmd[cmd.index("img") + 1:][:3] == ["python", "-m", "minislurm.grade.runner"]
    assert isinstance(sandbox.choose("img", docker="never"), sandbox.LocalSandbox)


def test_cli_says_what_is_wrong_without_grading_anything(tmp_path, capsys):
    from minislurm.cli import grade, main

    assert main.main(["--help"]) == 0 and "grade" in capsys.readouterr().out
    assert grade.main([]) == 1 and "assign" in capsys.readouterr().out
    assert grade.main(["mark"]) == 1 and "unknown command 'mark'" in capsys.readouterr().err
    assert grade.main(["run", str(tmp_path / "nope"), "--autograder", "x.zip"]) == 1
    assert "is not a folder" in capsys.readouterr().err
    assert grade.main(["run", str(tmp_path), "--autograder", str(tmp_path / "x.zip")]) == 1
    assert f"--autograder {tmp_path / 'x.zip'} does not exist" in capsys.readouterr().err
    make_zip(tmp_path / "lab-autograder.zip", "lab")
    assert grade.main(["run", str(tmp_path), "--autograder", str(tmp_path / "lab-autograder.zip")]) == 1
    assert "no *.ipynb under" in capsys.readouterr().err
    plain = tmp_path / "plain.ipynb"
    plain.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert grade.main(["assign", str(plain), "--out", str(tmp_path / "d")]) == 1
    assert "no lab notebook with tagged exercises" in capsys.readouterr().err
