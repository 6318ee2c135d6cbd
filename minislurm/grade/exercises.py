"""The exercises of a lab notebook, read from its cell tags.

The labs are the instructor's versions and must run as plain notebooks (nbval executes them in
CI), so they carry no otter syntax.  Tags say what each cell is:

- ``answer`` + ``exercise-N``: the student's cell; its solution sits between ``# BEGIN SOLUTION``
  and ``# END SOLUTION`` and is blanked in the student version;
- ``check`` + ``exercise-N``: plain asserts the student sees and runs (public test cases);
- ``hidden-check`` + ``exercise-N``: more asserts, first line ``# HIDDEN ...``; only the
  autograder has them.

A question is worth the ``"points"`` of its answer cell's metadata (required), all or nothing: it
scores them when every check and hidden check passes, else 0.  Check cells carry no points, so a
check that only tests that an answer is well formed cannot earn anything on its own.  A check
cell reads from the notebook only the names its answer cell binds, and imports everything else
under private names: it runs in the referee (:mod:`.referee`), where nothing else of the
notebook exists.  A check cell's ``"timeout"`` metadata gives it more than the default 30 s (a
check that starts a live cluster).  The instructor guide has the rules; labs/ has the examples.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from minislurm.grade.testgen import defined_names, free_names

ANSWER, CHECK, HIDDEN = "answer", "check", "hidden-check"
EXERCISE_TAG = re.compile(r"exercise-(\d+)")
CHECK_TIMEOUT = 30.0  # seconds the referee gives a check cell unless its metadata says "timeout"


@dataclass
class TestCell:
    """One test case: a cell of asserts, and whether students see it."""

    index: int  # position in the lab notebook
    source: str
    hidden: bool
    timeout: float = CHECK_TIMEOUT


@dataclass
class Exercise:
    number: int
    answer: int | None = None  # index of the answer cell
    points: float = 0.0
    answers: tuple[str, ...] = ()  # the names the answer cell binds
    reads: tuple[str, ...] = ()  # those of them the checks read: what the referee asks the kernel for
    tests: list[TestCell] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The otter question name, and what students pass to ``grader.check``."""
        return f"exercise-{self.number}"

    def spec(self) -> dict:
        """What the referee needs to grade this question (:func:`checks_spec`)."""
        return {"points": self.points, "answers": list(self.reads),
                "checks": [{"source": t.source, "hidden": t.hidden, "timeout": t.timeout} for t in self.tests]}


class LabFormatError(ValueError):
    """A lab's tags do not describe gradable exercises."""


def cell_role(cell) -> tuple[str, int] | None:
    """``(role, exercise number)`` of a tagged cell, or None for an ordinary cell."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    numbers = [int(m.group(1)) for t in tags if (m := EXERCISE_TAG.fullmatch(t))]
    roles = [r for r in (ANSWER, CHECK, HIDDEN) if r in tags]
    if not numbers and not roles:
        return None
    if len(numbers) != 1 or len(roles) != 1:
        raise LabFormatError(f"a cell needs exactly one exercise-N tag and one of answer/check/"
                             f"hidden-check, found tags {sorted(tags)}: {cell.source[:60]!r}")
    return roles[0], numbers[0]


def read_exercises(nb) -> dict[int, Exercise]:
    """The exercises of ``nb`` by number, each with its answer cell and test cells in order."""
    found: dict[int, Exercise] = {}
    for i, cell in enumerate(nb.cells):
        role = cell_role(cell)
        if role is None:
            continue
        kind, n = role
        if cell.cell_type != "code":
            raise LabFormatError(f"exercise-{n}: the {kind} cell must be a code cell")
        ex = found.setdefault(n, Exercise(n))
        if kind == ANSWER:
            if ex.answer is not None:
                raise LabFormatError(f"exercise-{n} has two answer cells")
            if "# BEGIN SOLUTION" not in cell.source or "# END SOLUTION" not in cell.source:
                raise LabFormatError(f"exercise-{n}: the answer cell has no # BEGIN/END SOLUTION")
            points = cell.metadata.get("points")
            if isinstance(points, bool) or not isinstance(points, (int, float)) or points <= 0:
                raise LabFormatError(f'exercise-{n}: the answer cell needs "points": N > 0 in its metadata')
            ex.answer, ex.points = i, float(points)
            ex.answers = tuple(sorted({v for stmt in ast.parse(cell.source).body for v in defined_names(stmt)}))
        else:
            if ex.answer is None:
                raise LabFormatError(f"exercise-{n}: a {kind} cell comes before the answer cell")
            if "points" in cell.metadata:
                raise LabFormatError(f"exercise-{n}: a check cell carries no points (the answer cell's count)")
            timeout = float(cell.metadata.get("timeout", CHECK_TIMEOUT))
            ex.tests.append(TestCell(i, cell.source, hidden=kind == HIDDEN, timeout=timeout))
    for n, ex in found.items():
        if not any(not t.hidden for t in ex.tests):
            raise LabFormatError(f"exercise-{n} has no check cell (students need a public test)")
        ex.reads = _check_reads_only_answers(ex)
    return dict(sorted(found.items()))


def _check_reads_only_answers(ex: Exercise) -> tuple[str, ...]:
    """A check reads its exercise's answers and what its own or earlier checks define, nothing else;
    returns the answer names the checks read."""
    known, reads = set(ex.answers), set()
    for t in ex.tests:
        body = ast.parse(t.source).body
        names = free_names(body)
        reads |= names & set(ex.answers)
        stray = sorted(names - known - {"__builtins__"})
        if stray:
            raise LabFormatError(
                f"{ex.name}: a check reads {', '.join(stray)}, which the answer cell does not define; "
                f"import references inside the check under private names "
                f"(from minislurm... import {stray[0]} as _{stray[0]})")
        known |= {v for stmt in body for v in defined_names(stmt)}
    return tuple(sorted(reads))


def checks_spec(nb, lab: str) -> dict:
    """The file the autograder zip carries for the referee: every question, its points and checks."""
    return {"lab": lab, "questions": {ex.name: ex.spec() for ex in read_exercises(nb).values()}}
