"""The lab notebooks' exercises: tagged for the grader, and their checks tell right from wrong.

nbval (``pytest --nbval-lax labs/``) proves every notebook runs with its worked answers.  Here each
exercise's checks (the public one, then the hidden ones: a question pays only when all pass) also
run against a plausible *wrong* answer, which they must reject: checks that pass everything would
grade nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.daemons  # each test runs a lab in a notebook kernel

LABS = Path(__file__).resolve().parents[2] / "labs"

WRONG = {
    ("05-priority", 1): "ablation_priority = 179  # rounded instead of truncated",
    ("05-priority", 2): "my_weights = Weights(age=0, fairshare=0, jobsize=10000)",
    ("05-priority", 3): "longest_half_life_days = 28",
    ("06-backfill", 1): "max_limit_min = 120",
    ("06-backfill", 2): 'my_jobs = [LabJob("A", 0, 1, 4, 120), LabJob("B", 10, 2, 4, 300)]\nvictim = "B"',
    ("06-backfill", 3): "window_start_h = 72",
    ("08-at-scale", 1): "fifo_nodes = 112",
    ("08-at-scale", 2): "best_interval_s = 3600.0",
    ("08-at-scale", 3): "young_2node_h = math.sqrt(2 * 120 * 500 * 3600) / 3600  # node MTBF, not the job's",
    ("08b-scenario-1", 1): "def job_mtbf_h(node_mtbf_h, nodes):\n    return node_mtbf_h / max(1, nodes - 1)  # off by one",
    ("08b-scenario-1", 2): "interval_s = math.sqrt(2 * 300 * 6_300 * 3600)  # the node's MTBF, not the job's",
    ("08b-scenario-1", 3): ("def chain_options(train_days, max_time_h, startup_h):\n"
                            "    return ['--array=0-20%1', '--time=1-00:00:00']  # startup not counted"),
    ("08b-scenario-1", 4): "best_interval_min = 15  # chapter 8's best, for checkpoints ten times cheaper",
}


def exercises(nb) -> dict[int, dict[str, str]]:
    """answer, check and (joined, for the grader's hidden tests) hidden-check sources by exercise."""
    found: dict[int, dict[str, str]] = {}
    for cell in nb.cells:
        tags = set(cell.metadata.get("tags", []))
        for tag in tags:
            m = re.fullmatch(r"exercise-(\d+)", tag)
            if m:
                kind = next((k for k in ("answer", "check", "hidden-check") if k in tags), None)
                assert kind, f"exercise cell without answer/check/hidden-check tag: {cell.source[:60]!r}"
                cells = found.setdefault(int(m.group(1)), {})
                if kind == "hidden-check":
                    assert cell.source.startswith("# HIDDEN"), "a hidden check starts with '# HIDDEN'"
                    cells[kind] = cells.get(kind, "") + cell.source + "\n"
                    continue
                assert kind not in cells, f"two {kind} cells"
                cells[kind] = cell.source
    return found


def setup_source(nb) -> str:
    return next(c.source for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("name", sorted({n for n, _ in WRONG}))
def test_each_lab_has_tagged_exercises_with_solution_markers(name):
    nb = nbformat.read(LABS / f"{name}.ipynb", as_version=4)
    found = exercises(nb)
    assert sorted(found)[:3] == [1, 2, 3] and sorted(found) == list(range(1, len(found) + 1))
    for n, cells in found.items():
        assert {"answer", "check"} <= set(cells) <= {"answer", "check", "hidden-check"}, (name, n)
        assert "# BEGIN SOLUTION" in cells["answer"] and "# END SOLUTION" in cells["answer"]
        assert "assert" in cells["check"]
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit labs without outputs"


@pytest.mark.parametrize("name, n", sorted(WRONG))
def test_check_accepts_the_worked_answer_and_rejects_a_wrong_one(name, n):
    nb = nbformat.read(LABS / f"{name}.ipynb", as_version=4)
    cells = exercises(nb)[n]
    right: dict = {}
    exec(setup_source(nb), right)
    exec(cells["answer"], right)
    exec(cells["check"], right)
    exec(cells.get("hidden-check", ""), right)  # the grader's hidden tests pass on the worked answer too
    wrong: dict = {}
    exec(setup_source(nb), wrong)
    exec(WRONG[(name, n)], wrong)
    with pytest.raises(AssertionError):  # a question pays only when its check and hidden checks all pass
        exec(cells["check"], wrong)
        exec(cells.get("hidden-check", ""), wrong)
