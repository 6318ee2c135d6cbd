"""``minislurm grade run``: grade a folder of submissions into ``grades.csv``.

otter's own folder command (``otter grade``) only runs in Docker containers it builds from the
internet; this replaces it with a loop over :func:`.sandbox.run_one` and a CSV of one row per
student and question (``student,question,score,max``).

Layouts: ``SUBMISSIONS/<student>.ipynb`` (the student is the file name) or
``SUBMISSIONS/<student>/<lab>.ipynb`` (the student is the folder).  With ``--dist`` each notebook
is graded by its lab's zip, found from the file name or the notebook's otter metadata.

A submission that cannot be graded at all (not a notebook, the wrong lab, timed out as a whole)
gets 0 for every question of its lab and one ``FAILED`` line that says why; the others go on.
"""

from __future__ import annotations

import json
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from minislurm.grade.sandbox import Outcome, run_one


@dataclass
class Submission:
    student: str
    path: Path
    lab: str | None = None  # the lab's name; None when it cannot be told
    autograder: Path | None = None
    error: str | None = None  # a reason not to run it at all


@dataclass
class Graded:
    submission: Submission
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)  # question -> (score, max)
    error: str | None = None
    notes: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    failures: dict[str, str] = field(default_factory=dict)  # question -> what was wrong (below full marks)


def _natural(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def questions_in(autograder: Path) -> dict[str, float]:
    """Question -> points, from the zip's check file (each question all or nothing)."""
    from minislurm.grade.sandbox import checks_in

    questions = checks_in(autograder)["questions"]
    return {q: float(spec["points"]) for q, spec in sorted(questions.items(), key=lambda kv: _natural(kv[0]))}


def assignment_name(autograder: Path) -> str:
    with zipfile.ZipFile(autograder) as zf:
        try:
            config = json.loads(zf.read("otter_config.json"))
        except KeyError:
            config = {}
    return config.get("assignment_name") or autograder.stem.removesuffix("-autograder")


def _notebook_lab(path: Path) -> tuple[str | None, str | None]:
    """(otter assignment name, why the file is unreadable) of a submitted notebook."""
    try:
        nb = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        return None, f"not a readable notebook ({type(e).__name__}: {str(e)[:120]})"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, "not a notebook (no list of cells)"
    meta = nb.get("metadata", {}).get("otter", {}) if isinstance(nb.get("metadata"), dict) else {}
    return (meta.get("assignment_name") if isinstance(meta, dict) else None), None


def find_submissions(root: Path, *, autograder: Path | None = None,
                     dist: Path | None = None) -> list[Submission]:
    """Every ``*.ipynb`` under ``root`` (hidden folders skipped), with its student and lab."""
    if (autograder is None) == (dist is None):
        raise ValueError("give exactly one of autograder and dist")
    if autograder is not None:
        labs = {assignment_name(autograder): autograder}
    else:
        labs = {}
        for z in sorted((dist / "autograder").glob("*-autograder.zip")):
            labs[assignment_name(z)] = z
        if not labs:
            raise ValueError(f"no *-autograder.zip under {dist / 'autograder'} (run 'minislurm grade assign')")
    found: list[Submission] = []
    seen: set[tuple[str, str | None]] = set()
    for path in sorted(root.rglob("*.ipynb")):
        rel = path.relative_to(root)
        if any(part.startswith((".", "__")) for part in rel.parts):
            continue  # .ipynb_checkpoints, __MACOSX
        student = rel.parts[0] if len(rel.parts) > 1 else path.stem
        meta_lab, unreadable = _notebook_lab(path)
        if len(labs) == 1:
            lab = next(iter(labs))
        elif len(rel.parts) > 1 and path.stem in labs:
            lab = path.stem
        else:
            lab = meta_lab if meta_lab in labs else None
        sub = Submission(student, path, lab, labs.get(lab) if lab else None, unreadable)
        if lab is None and sub.error is None:
            sub.error = f"cannot tell which lab it is (labs: {', '.join(labs)})"
        if (student, lab) in seen:
            sub.error = f"a second submission of {student} for {lab}; only the first is graded"
        seen.add((student, lab))
        found.append(sub)
    return found


def grade_one(sandbox, sub: Submission, *, cell_timeout: float, total_timeout: float) -> Graded:
    questions = questions_in(sub.autograder) if sub.autograder else {}
    if sub.error:
        return Graded(sub, {q: (0.0, p) for q, p in questions.items()}, sub.error,
                      failures={q: sub.error for q in questions})
    outcome: Outcome = run_one(sandbox, sub.path, sub.autograder, cell_timeout=cell_timeout,
                               total_timeout=total_timeout)
    scores = {q: (0.0, p) for q, p in questions.items()}
    failures = {q: outcome.error or "not graded" for q in questions}
    if outcome.error is None:
        for q, r in outcome.result.get("questions", {}).items():
            if q in questions:  # a question the instructor's zip does not have is not the runner's to add
                scores[q] = (min(float(r["score"]), questions[q]), questions[q])
                failures[q] = "; ".join(r.get("failed") or []) if scores[q][0] < questions[q] else ""
    return Graded(sub, scores, outcome.error, outcome.result.get("notes", {}) or {}, outcome.seconds,
                  {q: m for q, m in failures.items() if m})


def grade_folder(subs: list[Submission], *, sandbox=None, cell_timeout: float = 120, total_timeout: float = 900,
                 jobs: int = 1, progress=None) -> list[Graded]:
    """Grade the submissions (:func:`find_submissions`); ``progress(graded)`` is called as each one ends."""
    from minislurm.grade.sandbox import LocalSandbox

    sandbox = sandbox or LocalSandbox()

    def one(sub: Submission) -> Graded:
        g = grade_one(sandbox, sub, cell_timeout=cell_timeout, total_timeout=total_timeout)
        if progress:
            progress(g)
        return g

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, subs))


def question_label(graded: list[Graded], g: Graded, question: str) -> str:
    """The question's name, prefixed with the lab when the run covers several labs."""
    labs = {x.submission.lab for x in graded if x.submission.lab}
    return f"{g.submission.lab}/{question}" if len(labs) > 1 else question


def rows(graded: list[Graded]) -> list[tuple[str, str, float, float]]:
    """(student, question, score, max), sorted by student and question."""
    out = []
    for g in graded:
        for q, (score, most) in g.scores.items():
            out.append((g.submission.student, question_label(graded, g, q), score, most))
    return sorted(out, key=lambda r: (_natural(r[0]), _natural(r[1])))


def failures(graded: list[Graded]) -> dict[tuple[str, str], str]:
    """(student, question) -> what was wrong, for every question below full marks."""
    return {(g.submission.student, question_label(graded, g, q)): m for g in graded for q, m in g.failures.items()}


def _num(x: float) -> str:
    return f"{x:g}"


def summary(graded: list[Graded]) -> str:
    """A table: one line per student, its questions as score/max, its total; then the failures."""
    table = rows(graded)
    questions = sorted({r[1] for r in table}, key=_natural)
    students = sorted({r[0] for r in table} | {g.submission.student for g in graded}, key=_natural)
    cell = {(r[0], r[1]): f"{_num(r[2])}/{_num(r[3])}" for r in table}
    wide = len(questions) <= 6
    header = ["student"] + (questions if wide else []) + ["total"]
    lines = []
    for s in students:
        mine = [r for r in table if r[0] == s]
        total = f"{_num(sum(r[2] for r in mine))}/{_num(sum(r[3] for r in mine))}"
        lines.append([s] + ([cell.get((s, q), "-") for q in questions] if wide else []) + [total])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*header)] + [fmt.format(*line) for line in lines]
    for g in sorted(graded, key=lambda g: (_natural(g.submission.student), g.submission.path.name)):
        where = f"{g.submission.student} ({g.submission.path.name})"
        if g.error:
            out.append(f"FAILED {where}: {g.error}")
        for q, note in sorted(g.notes.items(), key=lambda kv: _natural(kv[0])):
            out.append(f"note   {where} {q}: {note}")
        if not g.error:
            for q, why in sorted(g.failures.items(), key=lambda kv: _natural(kv[0])):
                out.append(f"wrong  {where} {q}: {why}")
    return "\n".join(out)
