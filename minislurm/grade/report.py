"""What ``grade run`` writes for the instructor: ``grades.csv``, and beside it (``G`` is its name
without .csv) the summaries below.

``grades.csv`` has one row per student and question: ``student,question,score,max,status``.
``status`` is ``graded``, or ``not graded (timed out after N s; rerun)`` when something the
question depends on ran past its time limit: on a slow machine a right answer can too, so such a
question has no score (an empty cell, never 0) until ``grade run --rerun-timed-out`` grades it.

- ``G-failures.csv``: student, question, what was wrong (the failing check's message, or why the
  submission could not be graded), for every question that did not score full marks;
- ``G-questions.csv``: per question, its points, the mean score, the share of students at full
  marks, and the most common failure message with how many students got it: where a class went
  wrong;
- ``G-lms.csv``: one row per student, one column per question and a total, the layout gradebooks
  (Canvas, Moodle, Blackboard) import;
- ``G-scores.png``: the distribution of total scores (in percent) and each question's mean.

Not graded questions count in none of the means, shares and totals; the gradebook gets an empty
cell for each, and an empty total for a student with one.

Regrading one student (``grade run --student NAME``) replaces that student's rows in grades.csv and
G-failures.csv and rewrites the rest from the merged tables; ``--rerun-timed-out`` replaces the rows
it regrades.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

Row = tuple[str, str, "float | None", float, str]  # student, question, score (None: not graded), max, status
GRADED = "graded"


def not_graded(seconds: float, what: str = "") -> str:
    """The status and message of a question that ran past a time limit of ``seconds``."""
    return f"not graded (timed out after {seconds:g} s; rerun)" + (f": {what}" if what else "")


def _natural(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _num(x: float) -> str:
    return f"{x:g}"


def sibling(grades: Path, what: str, suffix: str = ".csv") -> Path:
    return grades.with_name(f"{grades.stem}-{what}{suffix}")


def write_grades(path: Path, rows: list[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", "question", "score", "max", "status"])
        for student, question, score, most, status in sorted(rows, key=lambda r: (_natural(r[0]), _natural(r[1]))):
            w.writerow([student, question, "" if score is None else _num(score), _num(most), status])


def read_grades(path: Path) -> list[Row]:
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [(r["student"], r["question"], float(r["score"]) if r["score"] else None, float(r["max"]),
                 r.get("status") or GRADED) for r in csv.DictReader(f)]


def ungraded(rows: list[Row]) -> list[Row]:
    """The rows not graded (timed out): what ``--rerun-timed-out`` regrades."""
    return [r for r in rows if r[2] is None]


def read_failures(path: Path) -> dict[tuple[str, str], str]:
    if not path.exists():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        return {(r["student"], r["question"]): r["message"] for r in csv.DictReader(f)}


def merge(old: list[Row], old_fail: dict, new: list[Row], new_fail: dict, students: set[str] | None = None):
    """The old tables with ``students``' rows replaced by the new ones (None: the rows, by student
    and question, that the new table has)."""
    if students is None:
        keys = {(r[0], r[1]) for r in new}
        stale = lambda k: k in keys  # noqa: E731
    else:
        stale = lambda k: k[0] in students  # noqa: E731
    rows = [r for r in old if not stale((r[0], r[1]))] + list(new)
    fails = {k: v for k, v in old_fail.items() if not stale(k)} | dict(new_fail)
    return rows, fails


def question_summary(rows: list[Row], failures: dict) -> list[list[str]]:
    """Per question, over the graded rows only; ``not_graded`` counts the others."""
    out = [["question", "max", "mean", "full_marks_share", "most_common_failure", "students_with_it", "not_graded"]]
    for q in sorted({r[1] for r in rows}, key=_natural):
        mine = [r for r in rows if r[1] == q and r[2] is not None]
        waiting = {r[0] for r in rows if r[1] == q and r[2] is None}
        most = max(r[3] for r in rows if r[1] == q)
        mean = f"{sum(r[2] for r in mine) / len(mine):.2f}" if mine else ""
        full = f"{sum(1 for r in mine if r[2] >= r[3]) / len(mine):.2f}" if mine else ""
        counts = Counter(m for (s, qq), m in failures.items() if qq == q and m and s not in waiting)
        msg, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0])) if counts else ("", 0)  # ties: alphabetical
        out.append([q, _num(most), mean, full, msg, str(n), str(len(waiting))])
    return out


def lms_table(rows: list[Row]) -> list[list[str]]:
    questions = sorted({r[1] for r in rows}, key=_natural)
    cell = {(r[0], r[1]): r[2] for r in rows}
    most = {r[1]: r[3] for r in rows}
    out = [["student"] + [f"{q} ({_num(most[q])})" for q in questions] + [f"total ({_num(sum(most.values()))})"]]
    for s in sorted({r[0] for r in rows}, key=_natural):
        scores = [cell.get((s, q), 0.0) for q in questions]
        # a question not graded is an empty cell (a gradebook then keeps no grade), and so is the
        # total it would change: a partial total would read as the student's grade
        total = "" if None in scores else _num(sum(scores))
        out.append([s] + ["" if x is None else _num(x) for x in scores] + [total])
    return out


def _write_table(path: Path, table: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(table)


def chart(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    waiting = {r[0] for r in rows if r[2] is None}  # students with a question not graded: no total yet
    students = sorted({r[0] for r in rows} - waiting)
    totals = [100 * sum(r[2] for r in rows if r[0] == s) / max(1e-9, sum(r[3] for r in rows if r[0] == s))
              for s in students]
    questions = sorted({r[1] for r in rows}, key=_natural)
    graded = [r for r in rows if r[2] is not None]
    means = [100 * sum(r[2] for r in graded if r[1] == q) / max(1e-9, sum(r[3] for r in graded if r[1] == q))
             for q in questions]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    a.hist(totals, bins=[i * 10 for i in range(11)], color="#4c72b0", edgecolor="white")
    later = f", {len(waiting)} not graded yet" if waiting else ""
    a.set(title=f"total scores ({len(students)} students{later})", xlabel="percent of the points", ylabel="students")
    a.yaxis.get_major_locator().set_params(integer=True)
    b.bar(range(len(questions)), means, color="#55a868")
    b.set_xticks(range(len(questions)), questions, rotation=45, ha="right", fontsize=8)
    b.set(title="mean score per question", ylabel="percent", ylim=(0, 100))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_reports(grades: Path, rows: list[Row], failures: dict[tuple[str, str], str]) -> list[Path]:
    """grades.csv and everything beside it; returns the paths written."""
    write_grades(grades, rows)
    paths = [grades, sibling(grades, "failures"), sibling(grades, "questions"), sibling(grades, "lms"),
             sibling(grades, "scores", ".png")]
    _write_table(paths[1], [["student", "question", "message"]] +
                 [[s, q, m] for (s, q), m in sorted(failures.items(), key=lambda kv: (_natural(kv[0][0]), _natural(kv[0][1])))])
    _write_table(paths[2], question_summary(rows, failures))
    _write_table(paths[3], lms_table(rows))
    if rows:
        chart(rows, paths[4])
    return paths
