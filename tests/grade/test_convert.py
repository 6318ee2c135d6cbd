"""The lab-to-otter conversion without running otter: tags, test functions, the master notebook."""

from __future__ import annotations

import ast

import nbformat
import pytest

from gradekit import ROOT
from minislurm.grade.exercises import LabFormatError, read_exercises
from minislurm.grade.master import build_master
from minislurm.grade.testgen import Definitions, case_cell_source, case_function, free_names


def code(source, *tags, **meta):
    cell = nbformat.v4.new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    cell.metadata.update(meta)
    return cell


def lab(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


def test_free_names_are_what_a_check_reads_from_the_notebook():
    body = ast.parse("def _ok(d):\n    return rank(d) > limit\nn = len(xs)\nassert all(_ok(d) for d in range(n))").body
    assert free_names(body) == {"rank", "limit", "xs"}


def test_a_check_becomes_a_function_of_the_notebook_variables_it_reads():
    fn = case_function("test_q", "# Check\nr = rank(w)\nassert answer == r.priority('a'), 'no'")
    assert fn.splitlines()[0] == "def test_q(answer, rank, w):"
    env = {"rank": lambda w: type("R", (), {"priority": lambda self, n: w * 2})(), "w": 3, "answer": 6}
    scope: dict = {}
    exec(fn, scope)
    scope["test_q"](**{k: env[k] for k in ("answer", "rank", "w")})  # passes
    with pytest.raises(AssertionError):
        scope["test_q"](answer=5, rank=env["rank"], w=3)


def test_a_later_check_gets_the_helpers_of_an_earlier_one_copied_in():
    defs = Definitions()
    defs.add_cell("H = 3600\ndef queued(h):\n    return run(h * H)\nassert queued(answer)")
    fn = case_function("test_hidden", "# HIDDEN\nassert queued(answer).ok", defs)
    tree = ast.parse(fn).body[0]
    assert [a.arg for a in tree.args.args] == ["answer", "run"]  # not queued, not H: copied in
    assert [type(s).__name__ for s in tree.body] == ["Assign", "FunctionDef", "Assert"]


def test_test_cells_carry_otter_config_with_points_and_visibility():
    src = case_cell_source("def test_x(a):\n    assert a", points=2.0, hidden=True)
    assert src.startswith('""" # BEGIN TEST CONFIG\npoints: 2\nhidden: true\n""" # END TEST CONFIG\ndef test_x')


def test_exercises_are_read_from_tags_with_hidden_checks_and_points():
    nb = lab(code("x = 1"),
             code("# BEGIN SOLUTION\ndef helper():\n    return 1\na = helper()\n# END SOLUTION", "answer", "exercise-1",
                  points=3),
             code("from math import floor as _floor\nassert a == _floor(1.5)", "check", "exercise-1"),
             code("# HIDDEN\nassert a > _floor(0.5)", "hidden-check", "exercise-1", timeout=90))
    ex = read_exercises(nb)[1]
    assert (ex.name, ex.answer, ex.points, ex.answers, ex.reads) == ("exercise-1", 1, 3.0, ("a", "helper"), ("a",))
    assert [(t.index, t.hidden, t.timeout) for t in ex.tests] == [(2, False, 30.0), (3, True, 90.0)]
    assert ex.spec()["answers"] == ["a"] and ex.spec()["points"] == 3.0


SOLVED = "# BEGIN SOLUTION\na = 1\n# END SOLUTION"


@pytest.mark.parametrize("cells, message", [
    ([code("a = 1", "answer", "exercise-1", points=1), code("assert a", "check", "exercise-1")], "BEGIN/END SOLUTION"),
    ([code(SOLVED, "answer", "exercise-1", points=1)], "no check cell"),
    ([code(SOLVED, "answer", "exercise-1"), code("assert a", "check", "exercise-1")], '"points": N > 0'),
    ([code(SOLVED, "answer", "exercise-1", points=1), code("assert a", "check", "exercise-1", points=1)],
     "check cell carries no points"),
    # a check may not read a notebook name other than the answers: it runs where nothing else exists
    ([code(SOLVED, "answer", "exercise-1", points=1), code("assert a == rank(1)", "check", "exercise-1")],
     "a check reads rank, which the answer cell does not define"),
    ([code("assert a", "check", "exercise-1")], "before the answer"),
    ([code("assert a", "check")], "exactly one exercise-N"),
])
def test_badly_tagged_labs_are_refused_with_a_reason(cells, message):
    with pytest.raises(LabFormatError, match=message):
        read_exercises(lab(*cells))


def test_lab6_master_keeps_the_chart_of_exercise_3_runnable_for_students():
    nb = nbformat.read(ROOT / "labs" / "06-backfill.ipynb", as_version=4)
    master = build_master(nb, "06-backfill")
    sources = [c.source for c in master.cells]
    assert master.cells[0].cell_type == "raw" and sources[0].startswith("# ASSIGNMENT CONFIG\nname: 06-backfill")
    assert sum(s.startswith("# BEGIN QUESTION") for s in sources) == 4
    assert sum('\nhidden: true\n' in s for s in sources) == 5
    assert sum('\nhidden: false\n' in s for s in sources) == 4
    at = next(i for i, s in enumerate(sources) if s.startswith("# Runs once you have answered exercise 3."))
    helper, chart = master.cells[at - 1], master.cells[at]
    assert "from minislurm.lab.scenario import LabJob as _LabJob, run_scenario as _run_scenario" in helper.source
    assert helper.source.startswith("# Defined by a check above") and "def queued(start_h):" in helper.source
    assert "raises-exception" in chart.metadata["tags"]
    assert chart.source.startswith("# Runs once you have answered exercise 3.\ngantt(queued(window_start_h)")
    assert not any(t in {"answer", "check", "hidden-check"} for c in master.cells for t in c.metadata.get("tags", []))


@pytest.mark.parametrize("path", sorted((ROOT / "labs").glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_tagged_lab_converts_to_an_otter_master(path):
    nb = nbformat.read(path, as_version=4)
    exercises = read_exercises(nb)  # a badly tagged lab fails here, with the reason
    if not exercises:
        pytest.skip("no tagged exercises")
    master = build_master(nb, path.stem)
    questions = [c.source for c in master.cells if c.cell_type == "raw" and c.source.startswith("# BEGIN QUESTION")]
    assert len(questions) == len(exercises)
