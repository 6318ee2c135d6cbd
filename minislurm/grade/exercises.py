"""The exercises of a lab notebook, read from its cell tags.

The labs are the instructor's versions and must run as plain notebooks (nbval executes them in
CI), so they carry no otter syntax.  Tags say what each cell is:

- ``answer`` + ``exercise-N``: the student's cell; its solution sits between ``# BEGIN SOLUTION``
  and ``# END SOLUTION`` and is blanked in the student version;
- ``check`` + ``exercise-N``: plain asserts the student sees and runs (public test cases);
- ``hidden-check`` + ``exercise-N``: more asserts, first line ``# HIDDEN ...``; only the
  autograder has them (hidden test cases, graded separately, hence partial credit).

Each check cell is worth 1 point unless its metadata says ``"points": N``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ANSWER, CHECK, HIDDEN = "answer", "check", "hidden-check"
EXERCISE_TAG = re.compile(r"exercise-(\d+)")


@dataclass
class TestCell:
    """One test case: a cell of asserts, and whether students see it."""

    index: int  # position in the lab notebook
    source: str
    hidden: bool
    points: float = 1.0


@dataclass
class Exercise:
    number: int
    answer: int | None = None  # index of the answer cell
    tests: list[TestCell] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The otter question name, and what students pass to ``grader.check``."""
        return f"exercise-{self.number}"

    @property
    def points(self) -> float:
        return sum(t.points for t in self.tests)


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
            ex.answer = i
        else:
            if ex.answer is None:
                raise LabFormatError(f"exercise-{n}: a {kind} cell comes before the answer cell")
            points = float(cell.metadata.get("points", 1))
            ex.tests.append(TestCell(i, cell.source, hidden=kind == HIDDEN, points=points))
    for n, ex in found.items():
        if not any(not t.hidden for t in ex.tests):
            raise LabFormatError(f"exercise-{n} has no check cell (students need a public test)")
    return dict(sorted(found.items()))
