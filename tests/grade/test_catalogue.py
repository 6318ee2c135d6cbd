"""The adversarial catalogue through ``minislurm grade run``: every wrong or gamed answer scores 0 on
its question, the worked answers full marks.

One ``grade run`` per lab grades nine submissions (the worked answers, and one submission per
kind of attack with every question answered that way: tests/grade/catalogue.py).  A second run
grades the public-check-only answers against the public checks alone, to show they really pass
them (so their 0 comes from the hidden checks, not from a typo in the catalogue).

CI runs a representative lab (:data:`CI_LABS`: numbers, minislurm objects, every kind of attack;
35-70 s on two busy cores) whole, and every other lab with one submission: the first question
worked (full marks: the run graded), every other answered by the catalogue's public-check-only
answer (or its wrong one where the public check already catches every wrong answer), which must
earn nothing.

Time limits: only the "loops" submission is meant to run past one, so the run that has it uses a
short cell limit (3 s: each of its questions costs that), and every other run a limit a loaded
2-core machine meets (lab 8's worked first answer replays a trace on three cluster sizes: about
3 s alone here, so a 3 s limit left it not graded -- before, 0 -- under load).  Whatever else runs
past its limit anyway is graded again with ``--rerun-timed-out`` and a larger one.  The loops
themselves must come out not graded, never paid.  ``MINISLURM_FULL_CATALOGUE=1`` runs every
lab whole, the live-cluster exercises included (about 23 minutes on two busy cores, most of it
the labs' own live demos, which every submission runs; BENCHMARKS.md).
"""

from __future__ import annotations

import json
import os
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from catalogue import CATALOGUE, attacks
from gradekit import LABS, ROOT, minislurm, worked_answers, write_submission
from minislurm.grade.assign import CHECKS
from minislurm.grade.exercises import read_exercises
from test_run import read_csv

CI_LABS = ("05-priority",)
RUN = LABS if os.environ.get("MINISLURM_FULL_CATALOGUE") == "1" else CI_LABS


def public_only_zip(autograder: Path, out: Path) -> Path:
    """A copy of the lab's zip whose checks are only the public ones."""
    with zipfile.ZipFile(autograder) as zf:
        spec = json.loads(zf.read(CHECKS))
    for q in spec["questions"].values():
        q["checks"] = [c for c in q["checks"] if not c["hidden"]]
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(CHECKS, json.dumps(spec))
        zf.writestr("otter_config.json", json.dumps({"assignment_name": spec["lab"]}))
    return out


ROOMY = 60  # seconds: the cell limit of a run where nothing is meant to loop
RERUN = 180  # seconds: the cell limit a submission that timed out anyway (a loaded machine) is rerun with


def grade(folder: Path, autograder: Path, out: Path, *, timeout: float = ROOMY,
          looping: tuple[str, ...] = ()) -> dict[tuple[str, str], tuple[float | None, float]]:
    """(student, question) -> (score, max); None: not graded.  A submission other than ``looping``
    that ran past ``timeout`` is graded again with RERUN seconds."""
    def run(limit: float, *more: str) -> None:
        proc = minislurm("grade", "run", str(folder), "--autograder", str(autograder), "--timeout", f"{limit:g}",
                         "--jobs", "2", "--docker", "never", "--out", str(out), *more, timeout=1800)
        assert proc.returncode in (0, 3), proc.stdout  # 3: some questions not graded (timed out)
        assert "FAILED" not in proc.stdout, proc.stdout  # every submission graded question by question

    def scores() -> dict[tuple[str, str], tuple[float | None, float]]:
        return {(s, q): (float(score) if score else None, float(most))
                for s, q, score, most, _ in read_csv(out)[1:]}

    run(timeout)
    slow = sorted({s for (s, _), (got, _) in scores().items() if got is None} - set(looping))
    if slow:
        run(RERUN, "--rerun-timed-out", *(arg for s in slow for arg in ("--student", s)))
    return scores()


@pytest.mark.parametrize("lab", RUN)
def test_every_wrong_or_gamed_answer_scores_zero_and_the_worked_answers_full_marks(dist, lab, tmp_path):
    out, _ = dist
    exercises = read_exercises(nbformat.read(ROOT / "labs" / f"{lab}.ipynb", as_version=4))
    answers = sorted({a for ex in exercises.values() for a in ex.answers})
    student = out / "student" / f"{lab}.ipynb"
    autograder = out / "autograder" / f"{lab}-autograder.zip"
    subs = attacks(lab, worked_answers(lab), answers)
    for name, cells in subs.items():
        write_submission(student, tmp_path / "subs" / f"{name}.ipynb", cells)

    scores = grade(tmp_path / "subs", autograder, tmp_path / "grades.csv", timeout=3, looping=("loops",))

    questions = [f"exercise-{n}" for n in exercises]
    for q in questions:
        got, most = scores[("worked", q)]
        assert got == most > 0, f"{lab} {q}: the worked answer scored {got}/{most}"
    wrongly_paid = [(name, q, scores[(name, q)][0]) for name in subs if name not in ("worked", "loops")
                    for q in questions if scores[(name, q)][0] != 0]
    assert wrongly_paid == [], f"{lab}: wrong answers earned points (None: not graded): {wrongly_paid}"
    # an endless loop is not told from a slow machine: not graded (rerun), and never paid
    paid_loops = [(q, scores[("loops", q)][0]) for q in questions if scores[("loops", q)][0] is not None]
    assert paid_loops == [], f"{lab}: looping answers were graded: {paid_loops}"
    status = {(r[0], r[1]): r[4] for r in read_csv(tmp_path / "grades.csv")[1:]}
    assert {status[("loops", q)] for q in questions} == {"not graded (timed out after 3 s; rerun)"}

    # The public-check-only answers do pass the public checks: their 0 above is the hidden checks'.
    gamed = [n for n, (_, p) in CATALOGUE[lab].items() if p is not None]
    if gamed:
        only = tmp_path / "public"
        write_submission(student, only / "public-only.ipynb", subs["public-only"])
        public = grade(only, public_only_zip(autograder, tmp_path / "public.zip"), tmp_path / "public.csv")
        failing = [n for n in gamed if public[("public-only", f"exercise-{n}")][0] != public[("public-only", f"exercise-{n}")][1]]
        assert failing == [], f"{lab}: these public-check-only answers fail the public check"


OTHER_LABS = [lab for lab in LABS if lab not in RUN]


@pytest.mark.skipif(not OTHER_LABS, reason="MINISLURM_FULL_CATALOGUE=1 grades every lab whole above")
def test_every_other_lab_pays_nothing_for_public_check_only_answers(dist, tmp_path):
    out, _ = dist

    questions = {}
    for lab in OTHER_LABS:  # in this thread: Python 3.11's ast.parse is not safe across threads
        exercises = read_exercises(nbformat.read(ROOT / "labs" / f"{lab}.ipynb", as_version=4))
        answers = sorted({a for ex in exercises.values() for a in ex.answers})
        worked = worked_answers(lab)
        gamed = attacks(lab, worked, answers)["public-only"]
        write_submission(out / "student" / f"{lab}.ipynb", tmp_path / lab / "mixed.ipynb", worked[:1] + gamed[1:])
        questions[lab] = [f"exercise-{n}" for n in exercises]

    def one(lab: str) -> list[tuple[str, str, float, float]]:
        scores = grade(tmp_path / lab, out / "autograder" / f"{lab}-autograder.zip", tmp_path / f"{lab}.csv")
        return [(lab, q, *scores[("mixed", q)]) for q in questions[lab]]

    with ThreadPoolExecutor(2) as pool:  # two labs' grade runs at a time, one per core
        per_lab = list(pool.map(one, OTHER_LABS))
    ungraded = [row for rows in per_lab for row in rows if row[2] is None]
    assert ungraded == [], f"not graded even with {RERUN} s a cell: {ungraded}"
    unpaid = [rows[0] for rows in per_lab if not rows[0][2] == rows[0][3] > 0]
    assert unpaid == [], f"a worked first answer did not earn full marks: {unpaid}"
    paid = [row for rows in per_lab for row in rows[1:] if row[2] != 0]
    assert paid == [], f"public-check-only or wrong answers earned points: {paid}"
