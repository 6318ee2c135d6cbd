"""Write the otter-grader master notebook of a tagged lab.

The master is a throwaway file: the lab in ``labs/`` stays the source of truth, and this module
only rewrites its tags in otter's raw-cell syntax::

    # ASSIGNMENT CONFIG (name, tests in the notebook metadata, exception-based)
    ... ordinary cells ...
    # BEGIN QUESTION (name: exercise-N)
    # BEGIN SOLUTION / the answer cell / # END SOLUTION
    # BEGIN TESTS / one cell per check and hidden-check cell / # END TESTS
    # END QUESTION

Two things keep the student version runnable top to bottom with the blanks unfilled:

- a check cell can define something a later ordinary cell uses (lab 6 draws ``queued(...)``, a
  function of exercise 3's check); the check becomes a test that students do not get as code, so
  those definitions are copied into a code cell just before their first user;
- an ordinary cell that reads an answer (lab 6's chart of ``window_start_h``) fails until the
  student answers; it is tagged ``raises-exception`` so Jupyter's "Run All", nbclient and
  nbconvert go on past it.
"""

from __future__ import annotations

import ast
import copy

import nbformat
import yaml

from minislurm.grade.exercises import ANSWER, CHECK, EXERCISE_TAG, HIDDEN, cell_role, read_exercises
from minislurm.grade.testgen import Definitions, case_cell_source, case_function, defined_names, free_names

OUR_TAGS = {ANSWER, CHECK, HIDDEN}


def assignment_config(name: str, *, run_tests: bool = True) -> dict:
    """otter's ASSIGNMENT CONFIG for a lab (no export cell, no PDFs: nothing that needs LaTeX)."""
    return {
        "name": name,
        "init_cell": True,
        "check_all_cell": False,
        "export_cell": False,
        "solutions_pdf": False,
        "run_tests": run_tests,
        "generate": {"show_stdout": False, "show_hidden": True, "pdf": False},
        "tests": {"files": False, "ok_format": False},
    }


def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def _yaml_block(header: str, config: dict):
    return _raw(f"# {header}\n" + yaml.safe_dump(config, sort_keys=False).strip())


def _strip_our_tags(cell):
    cell = copy.deepcopy(cell)
    tags = [t for t in cell.metadata.get("tags", []) if t not in OUR_TAGS and not EXERCISE_TAG.fullmatch(t)]
    if tags:
        cell.metadata["tags"] = tags
    else:
        cell.metadata.pop("tags", None)
    cell.metadata.pop("points", None)
    return cell


def _module_free_names(source: str) -> set[str]:
    try:
        return free_names(ast.parse(source).body)
    except SyntaxError:  # IPython magics: nothing to hoist, nothing to flag
        return set()


def build_master(lab, name: str, *, run_tests: bool = True):
    """The otter master notebook for ``lab`` (an nbformat v4 notebook named ``name``)."""
    exercises = read_exercises(lab)
    if not exercises:
        raise ValueError(f"{name}: no tagged exercises")

    # Test cases first, in notebook order, so a test may use what an earlier check defined.
    tests: dict[int, list] = {n: [] for n in exercises}
    defs = Definitions()
    for tc in sorted((t for ex in exercises.values() for t in ex.tests), key=lambda t: t.index):
        n = cell_role(lab.cells[tc.index])[1]
        kind = "hidden" if tc.hidden else "check"
        same = sum(1 for t in tests[n] if t[0] == tc.hidden) + 1
        fname = f"test_exercise_{n}_{kind}" + (f"_{same}" if tc.hidden or same > 1 else "")
        fn = case_function(fname, tc.source, defs)
        # otter's cases are for the students' grader.check; grading is the referee's (all or nothing)
        points = exercises[n].points if not tests[n] else 0
        tests[n].append((tc.hidden, case_cell_source(fn, points=points, hidden=tc.hidden)))
        defs.add_cell(tc.source)

    cells = [_yaml_block("ASSIGNMENT CONFIG", assignment_config(name, run_tests=run_tests))]
    answers: dict[str, int] = {}  # answer variable -> exercise number, once its question is out
    visible: set[str] = set()  # names the student version defines so far
    hoist = Definitions()  # what the check cells seen so far define
    for cell in lab.cells:
        role = cell_role(cell)
        if role is not None:
            kind, n = role
            if kind != ANSWER:
                hoist.add_cell(cell.source)
                continue
            answer = _strip_our_tags(cell)
            cells += [_yaml_block("BEGIN QUESTION", {"name": exercises[n].name}),
                      _raw("# BEGIN SOLUTION"), answer, _raw("# END SOLUTION"), _raw("# BEGIN TESTS")]
            cells += [nbformat.v4.new_code_cell(src) for _, src in tests[n]]
            cells += [_raw("# END TESTS"), _raw("# END QUESTION")]
            for stmt in ast.parse(cell.source).body:
                for var in defined_names(stmt):
                    answers[var] = n
                    visible.add(var)
            continue
        cell = copy.deepcopy(cell)
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        reads = _module_free_names(cell.source)
        missing = {r for r in reads - visible if r in hoist}
        if missing:
            stmts, src = hoist.closure(missing), hoist.closure_source(missing)
            helper = nbformat.v4.new_code_cell("# Defined by a check above; the next cell uses it.\n" + src)
            reads |= _module_free_names(src)
            for stmt in stmts:
                visible |= defined_names(stmt)
            _flag_if_needs_answers(helper, _module_free_names(src), answers)
            cells.append(helper)
        _flag_if_needs_answers(cell, reads, answers)
        for stmt in _parse_or_empty(cell.source):
            visible |= defined_names(stmt)
        cells.append(cell)

    return nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(lab.metadata))


def _parse_or_empty(source: str) -> list[ast.stmt]:
    try:
        return ast.parse(source).body
    except SyntaxError:
        return []


def _flag_if_needs_answers(cell, reads: set[str], answers: dict[str, int]) -> None:
    needs = sorted({answers[r] for r in reads if r in answers})
    if not needs:
        return
    tags = cell.metadata.setdefault("tags", [])
    if "raises-exception" not in tags:
        tags.append("raises-exception")
    which = ", ".join(str(n) for n in needs)
    cell.source = f"# Runs once you have answered exercise {which}.\n" + cell.source
