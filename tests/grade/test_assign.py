"""``minislurm grade assign`` on the real labs: student versions without solutions that still run
top to bottom, and autograder zips with the hidden tests."""

from __future__ import annotations

import json
import zipfile

import nbformat
import pytest

from gradekit import LABS, worked_answers
from minislurm.grade.assign import CHECKS
from minislurm.grade.folder import questions_in
from minislurm.grade.kernelwait import notebook_client
from minislurm.grade.quick import ipython_dir

TWO_EACH = {"exercise-1": 2, "exercise-2": 2, "exercise-3": 2}
LIVE_4 = {**TWO_EACH, "exercise-4": 3}  # exercise 4 runs the student's work on a live cluster
POINTS = {"01-cluster-basics": LIVE_4, "02-batch-jobs": LIVE_4, "03-gres-packing": {**TWO_EACH, "exercise-4": 2},
          "04-srun-env": {**TWO_EACH, "exercise-4": 2}, "05-priority": {**TWO_EACH, "exercise-4": 2},
          "06-backfill": {"exercise-1": 2, "exercise-2": 3, "exercise-3": 2, "exercise-4": 2},
          "07-failures": {"exercise-1": 3, "exercise-2": 2, "exercise-3": 2, "exercise-4": 3},
          "08-at-scale": {**TWO_EACH, "exercise-4": 2},
          "08b-scenario-1": {"exercise-1": 1, "exercise-2": 1, "exercise-3": 1, "exercise-4": 1},
          "10-daily-work": {"exercise-1": 1, "exercise-2": 2, "exercise-3": 2, "exercise-4": 2,
                            "exercise-5": 2}}


def test_assign_reports_each_lab(dist):
    out, stdout = dist
    for lab in LABS:
        assert f"{lab}: {len(POINTS[lab])} questions, {sum(POINTS[lab].values())} points" in stdout
        assert (out / "student" / f"{lab}.ipynb").is_file()
        assert (out / "autograder" / f"{lab}-autograder.zip").is_file()
    assert f"{len(LABS)} labs in" in stdout  # (--no-run-tests: test_catalogue.py grades the worked solutions)


@pytest.mark.parametrize("lab", LABS)
def test_student_version_has_no_solutions_and_only_public_tests(dist, lab):
    out, _ = dist
    text = (out / "student" / f"{lab}.ipynb").read_text()
    nb = nbformat.reads(text, as_version=4)
    everything = "\n".join([c.source for c in nb.cells] + list(nb.metadata["otter"]["tests"].values()))
    answers = [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
    assert len(answers) == len(POINTS[lab])
    for answer, worked in zip(answers, worked_answers(lab)):
        solution = worked.split("# BEGIN SOLUTION")[1].split("# END SOLUTION")[0].strip()
        assert solution not in everything
        assert answer.source == worked.split("# BEGIN SOLUTION")[0] + "..."  # the blank: otter's "..."
    assert "BEGIN SOLUTION" not in text and "HIDDEN" not in text and "hidden=True" not in text
    checks = [c.source for c in nb.cells if c.cell_type == "code" and "grader.check(" in c.source]
    assert checks == [f'grader.check("{q}")' for q in POINTS[lab]]
    assert sorted(nb.metadata["otter"]["tests"]) == sorted(POINTS[lab])
    assert nb.metadata["otter"]["assignment_name"] == lab


@pytest.mark.parametrize("lab", LABS)
def test_autograder_zip_has_every_test_with_its_points(dist, lab):
    out, _ = dist
    z = out / "autograder" / f"{lab}-autograder.zip"
    assert questions_in(z) == POINTS[lab]
    with zipfile.ZipFile(z) as zf:
        assert json.loads(zf.read("otter_config.json"))["assignment_name"] == lab
        tests = zf.read("tests/exercise-1.py").decode()
        checks = json.loads(zf.read(CHECKS))
    assert "hidden=True" in tests and "hidden=False" in tests and "OK_FORMAT = False" in tests
    assert checks["lab"] == lab and list(checks["questions"]) == list(POINTS[lab])
    for q in checks["questions"].values():  # every question has a public and a hidden check for the referee
        assert {c["hidden"] for c in q["checks"]} == {False, True} and q["answers"]


@pytest.mark.parametrize("lab", LABS)
def test_student_version_runs_top_to_bottom_with_the_blanks_unfilled(dist, lab, tmp_path, monkeypatch):
    out, _ = dist
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir(tmp_path / "ipython")))  # faster kernel start
    nb = nbformat.read(out / "student" / f"{lab}.ipynb", as_version=4)
    # Every cell of a student version runs in under 25 s (kernelwait.py: why not nbclient's own wait)
    notebook_client(nb, timeout=120, kernel_name="python3",
                    resources={"metadata": {"path": str(out / "student")}}).execute()  # raises on an error
    errors = [c for c in nb.cells if c.cell_type == "code"
              and any(o.output_type == "error" for o in c.outputs)]
    # only cells that need an answer may fail, and they are tagged so that Run All goes on
    assert all("raises-exception" in c.metadata.get("tags", []) for c in errors)
    checks = [c for c in nb.cells if c.cell_type == "code" and "grader.check(" in c.source]
    shown = ["".join(o.get("data", {}).get("text/plain", "") for o in c.outputs) for c in checks]
    assert all("exercise-" in s and "Test case failed" in s for s in shown), shown
