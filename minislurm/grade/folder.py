"""``minislurm grade run``: grade a folder of submissions into ``grades.csv``.

otter's own folder command (``otter grade``) only runs in Docker containers it builds from the
internet; this replaces it with a loop over :func:`.sandbox.run_one` and a CSV of one row per
student and question (``student,question,score,max``).

Layouts: ``SUBMISSIONS/<student>.ipynb`` (the student is the file name) or
``SUBMISSIONS/<student>/<lab>.ipynb`` (the student is the folder).  With ``--dist`` each notebook
is graded by its lab's zip, found from the file name or the notebook's otter metadata.

A submission that cannot be graded at all (not a notebook, the wrong lab) gets 0 for every
question of its lab and one ``FAILED`` line that says why; the others go on.  A question that ran
past a time limit (or a submission past the whole-submission limit) is not graded: no score, a
``TIMEOUT`` line, and ``grade run --rerun-timed-out`` grades it again (:mod:`.report`).
"""

from __future__ import annotations

import json
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from minislurm.grade.report import GRADED, not_graded
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
    scores: dict[str, tuple[float | None, float]] = field(default_factory=dict)  # question -> (score, max);
    # a score of None: not graded (timed out), its message in ``failures``
    error: str | None = None
    notes: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    failures: dict[str, str] = field(default_factory=dict)  # question -> what was wrong (below full marks)

    @property
    def not_graded(self) -> list[str]:
        """The questions that ran past a time limit: to be graded again (``--rerun-timed-out``)."""
        return [q for q, (score, _) in self.scores.items() if score is None]


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
    if outcome.timed_out is not None:  # past the whole-submission limit: nothing graded, no question wrong
        why = not_graded(outcome.timed_out, "the whole submission ran past its limit")
        return Graded(sub, {q: (None, p) for q, p in questions.items()}, None,
                      {"submission": outcome.error}, outcome.seconds, {q: why for q in questions})
    scores: dict[str, tuple[float | None, float]] = {q: (0.0, p) for q, p in questions.items()}
    failures = {q: outcome.error or "not graded" for q in questions}
    if outcome.error is None:
        for q, r in outcome.result.get("questions", {}).items():
            if q not in questions:  # a question the instructor's zip does not have is not the runner's to add
                continue
            if r.get("score") is None:  # ran past a time limit: not graded
                scores[q] = (None, questions[q])
                failures[q] = "; ".join(r.get("failed") or []) or not_graded(r.get("timed_out") or cell_timeout)
                continue
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


def question_label(labs: set[str], lab: str | None, question: str) -> str:
    """The question's name, prefixed with the lab when the run covers several ``labs`` (every lab
    found, not only those regraded: a rerun's rows must match the first run's)."""
    return f"{lab}/{question}" if len(labs) > 1 else question


def labs_of(items) -> set[str]:
    """The labs of these submissions (or graded submissions)."""
    return {s.lab for s in (getattr(x, "submission", x) for x in items) if s.lab}


def rows(graded: list[Graded], labs: set[str] | None = None) -> list[tuple[str, str, float | None, float, str]]:
    """(student, question, score, max, status), sorted by student and question."""
    labs = labs_of(graded) if labs is None else labs
    out = []
    for g in graded:
        for q, (score, most) in g.scores.items():
            status = GRADED if score is not None else g.failures[q].split(": ", 1)[0]
            out.append((g.submission.student, question_label(labs, g.submission.lab, q), score, most, status))
    return sorted(out, key=lambda r: (_natural(r[0]), _natural(r[1])))


def failures(graded: list[Graded], labs: set[str] | None = None) -> dict[tuple[str, str], str]:
    """(student, question) -> what was wrong (or why it is not graded), for every question below full marks."""
    labs = labs_of(graded) if labs is None else labs
    return {(g.submission.student, question_label(labs, g.submission.lab, q)): m
            for g in graded for q, m in g.failures.items()}


def timed_out_submissions(subs: list[Submission], keys: set[tuple[str, str]]) -> list[Submission]:
    """Those of ``subs`` with a question among ``keys`` (student, question as in grades.csv)."""
    labs = labs_of(subs)
    return [s for s in subs if s.autograder and any(
        (s.student, question_label(labs, s.lab, q)) in keys for q in questions_in(s.autograder))]


def _num(x: float) -> str:
    return f"{x:g}"


def _score(x: float | None) -> str:
    return "?" if x is None else _num(x)


def summary(graded: list[Graded], labs: set[str] | None = None) -> str:
    """A table: one line per student, its questions as score/max (``?``: not graded), its total
    (``+?`` when a question is not graded); then the failures, notes and timeouts."""
    table = rows(graded, labs)
    questions = sorted({r[1] for r in table}, key=_natural)
    students = sorted({r[0] for r in table} | {g.submission.student for g in graded}, key=_natural)
    cell = {(r[0], r[1]): f"{_score(r[2])}/{_num(r[3])}" for r in table}
    wide = len(questions) <= 6
    header = ["student"] + (questions if wide else []) + ["total"]
    lines = []
    for s in students:
        mine = [r for r in table if r[0] == s]
        later = "+?" if any(r[2] is None for r in mine) else ""
        total = f"{_num(sum(r[2] for r in mine if r[2] is not None))}{later}/{_num(sum(r[3] for r in mine))}"
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
            later = set(g.not_graded)
            for q, why in sorted(g.failures.items(), key=lambda kv: _natural(kv[0])):
                out.append(f"{'TIMEOUT' if q in later else 'wrong '} {where} {q}: {why}")
    return "\n".join(out)
