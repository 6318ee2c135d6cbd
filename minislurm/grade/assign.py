"""``minislurm grade assign``: student notebooks and autograder zips from the tagged labs.

For each lab this writes the otter master notebook (:mod:`.master`) into a temporary folder, runs
``otter assign`` on it in a subprocess (through :mod:`.quick`) (otter's output is long and its imports are heavy; a
subprocess also lets several labs be assigned at once) and keeps two files::

    DIST/student/<lab>.ipynb               solutions blanked, grader.check("exercise-N") cells
    DIST/autograder/<lab>-autograder.zip   every test, hidden ones included, for `grade run`;
                                           CHECKS in it: the check cells for the referee

By default the worked solutions are then graded as a student's submission would be (the student
version with its answer cells filled in, through :func:`.sandbox.run_one`), and assigning fails
unless every question scores full marks: a broken check is caught here, before students submit.
(otter's own test run is not used: it runs the checks in the notebook's kernel, not as grading does.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import copy
import json
import zipfile

import nbformat

from minislurm.grade.exercises import ANSWER, checks_spec, read_exercises
from minislurm.grade.master import build_master
from minislurm.grade.quick import ipython_dir


CHECKS = "minislurm-checks.json"  # in the autograder zip: the lab's questions, points and check cells


class AssignError(RuntimeError):
    """otter assign failed on a lab; the message holds the end of its output."""


@dataclass
class Assigned:
    lab: str
    student: Path
    autograder: Path
    questions: int
    points: float
    hidden_cases: int
    seconds: float

    def line(self) -> str:
        return (f"{self.lab}: {self.questions} questions, {self.points:g} points "
                f"({self.hidden_cases} hidden test cases) -> {self.student}, {self.autograder} "
                f"({self.seconds:.1f} s)")


def gradable_labs(paths: list[Path]) -> list[Path]:
    """The notebooks among ``paths`` (files or folders) that have tagged exercises."""
    found: list[Path] = []
    for p in paths:
        found += sorted(p.glob("*.ipynb")) if p.is_dir() else [p]
    return [p for p in found if read_exercises(nbformat.read(p, as_version=4))]


# Reading the exercises parses and builds Python ASTs, which Python 3.11 cannot do in two threads at
# once ("SystemError: AST constructor recursion depth mismatch", CPython gh-106905): labs assigned
# side by side take turns for that part and run their notebooks in parallel.
_AST_WORK = threading.Lock()


def assign_lab(lab: Path, dist: Path, *, run_tests: bool = True, timeout: float = 900) -> Assigned:
    t0 = time.monotonic()
    name = lab.stem
    nb = nbformat.read(lab, as_version=4)
    with _AST_WORK:
        exercises = read_exercises(nb)
        master = build_master(nb, name, run_tests=False)  # otter does not run the checks: check_worked does
        spec = checks_spec(nb, name)
    with tempfile.TemporaryDirectory(prefix=f"minislurm-assign-{name}-") as tmp:
        src = Path(tmp) / f"{name}.ipynb"
        nbformat.write(master, src)
        env = dict(os.environ, IPYTHONDIR=str(ipython_dir(Path(tmp) / "ipython")))
        cmd = [sys.executable, "-m", "minislurm.grade.quick", "assign", "--no-pdfs", "--no-run-tests", src.name, "out"]
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout)
        out = Path(tmp) / "out"
        zips = sorted((out / "autograder").glob(f"{name}-autograder_*.zip"))
        if proc.returncode != 0 or not zips:
            tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
            raise AssignError(f"{lab}: otter assign failed (exit {proc.returncode}):\n{tail}")
        (dist / "student").mkdir(parents=True, exist_ok=True)
        (dist / "autograder").mkdir(parents=True, exist_ok=True)
        student = dist / "student" / f"{name}.ipynb"
        autograder = dist / "autograder" / f"{name}-autograder.zip"
        shutil.copyfile(out / "student" / f"{name}.ipynb", student)
        shutil.copyfile(zips[-1], autograder)
        with zipfile.ZipFile(autograder, "a") as zf:
            zf.writestr(CHECKS, json.dumps(spec, indent=1))
        if run_tests:
            check_worked(nb, student, autograder, Path(tmp) / "worked.ipynb")
    return Assigned(name, student, autograder, len(exercises),
                    sum(e.points for e in exercises.values()),
                    sum(1 for e in exercises.values() for t in e.tests if t.hidden),
                    time.monotonic() - t0)


def with_answers(student_nb, answers: list[str]):
    """The student notebook with its answer cells (otter's tag, in order) replaced by ``answers``."""
    nb = copy.deepcopy(student_nb)
    cells = [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
    if len(cells) != len(answers):
        raise AssignError(f"the student notebook has {len(cells)} answer cells, not {len(answers)}")
    for cell, answer in zip(cells, answers):
        cell.source = answer
    return nb


def check_worked(lab_nb, student: Path, autograder: Path, scratch: Path) -> None:
    """Grade the worked solutions as a submission; :class:`AssignError` unless all score full marks."""
    from minislurm.grade.sandbox import LocalSandbox, run_one

    answers = [c.source for c in lab_nb.cells if ANSWER in c.metadata.get("tags", [])]
    nbformat.write(with_answers(nbformat.read(student, as_version=4), answers), scratch)
    outcome = run_one(LocalSandbox(), scratch, autograder, cell_timeout=300, total_timeout=1800)
    if outcome.error:
        raise AssignError(f"{student.stem}: grading the worked solutions failed: {outcome.error}\n{outcome.log_tail[-1500:]}")
    short = {q: r["failed"] for q, r in outcome.result["questions"].items()
             if r["score"] is None or r["score"] < r["possible"]}  # None: timed out, not graded
    if short:
        raise AssignError(f"{student.stem}: the worked solutions do not pass every check: {short}")


def assign(labs: list[Path], dist: Path, *, run_tests: bool = True, jobs: int = 1,
           done: Callable[[Assigned], None] | None = None) -> list[Assigned]:
    """Assign every lab (``jobs`` at a time), calling ``done`` as each is ready; raises
    :class:`AssignError` on the first failure."""
    def one(lab: Path) -> Assigned:
        assigned = assign_lab(lab, dist, run_tests=run_tests)
        if done:
            done(assigned)
        return assigned

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, labs))
