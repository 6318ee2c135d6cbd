"""Labs 1-4 and 7: exercises tagged for the grader, and checks that tell right from wrong.

Each exercise has an ``answer`` cell (worked solution between ``# BEGIN SOLUTION`` and
``# END SOLUTION``), a ``check`` cell and one or two ``hidden-check`` cells (``# HIDDEN`` first)
that test a second case.  The worked answer must pass the check and the hidden checks; a
plausible wrong answer must fail the check.  (``pytest --nbval-lax labs/`` runs the notebooks
themselves.)  Some checks start a small live cluster, so this module takes a minute.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.daemons  # each test runs a lab in a notebook kernel

LABS = Path(__file__).resolve().parents[2] / "labs"
NOTEBOOKS = ["01-cluster-basics", "02-batch-jobs", "03-gres-packing", "04-srun-env", "07-failures"]

WRONG = {
    ("01-cluster-basics", 1): "def can_take_work(state):\n    return state != 'down*'",
    ("01-cluster-basics", 2): "def to_hostlist(names):\n    return ','.join(sorted(names))",
    ("01-cluster-basics", 3): 'my_options = "--gres=gpu:1 --ntasks=3"',
    ("02-batch-jobs", 1): "def directives_read(script):\n    return [l for l in script.split('\\n') if '#SBATCH' in l]",
    ("02-batch-jobs", 2): "def winner(script, env, cli):\n    return script or env or cli",
    ("02-batch-jobs", 3): 'never_starts = "--gres=gpu:8"\nrefused = "-N3"',
    ("03-gres-packing", 1): "def stranded_gpus(free, want):\n    return sum(f for f in free if f < want)",
    ("03-gres-packing", 2): 'my_jobs = "3,6,3,6,3,6,5"',
    ("03-gres-packing", 3): 'def best_order(nodes, jobs, want):\n    return "largest"',
    ("04-srun-env", 1): ("def to_torch(env):\n    return {'RANK': int(env['SLURM_LOCALID']), 'LOCAL_RANK': "
                         "int(env['SLURM_LOCALID']), 'WORLD_SIZE': int(env['SLURM_NTASKS']), "
                         "'MASTER_ADDR': env['SLURMD_NODENAME']}"),
    ("04-srun-env", 2): 'my_args = ["--ntasks=8", "--gres=gpu:4"]',
    ("04-srun-env", 3): "def ranks_without_gpu(ntasks, gpus):\n    return list(range(ntasks - gpus))",
    ("07-failures", 1): "def steps_redone(crash_step, every):\n    return crash_step - every",
    ("07-failures", 2): 'states = ["NODE_FAIL", "COMPLETED"]\nrestarts = 1  # one crash, not two',
    ("07-failures", 3): "def warning_window(limit_min, sig_s):\n    return (limit_min * 60 - sig_s, limit_min * 60)",
}


def cells_of(name: str):
    return nbformat.read(LABS / f"{name}.ipynb", as_version=4).cells


def exercises(cells) -> dict[int, dict[str, list[str]]]:
    found: dict[int, dict[str, list[str]]] = {}
    for cell in cells:
        tags = set(cell.metadata.get("tags", []))
        for tag in tags:
            m = re.fullmatch(r"exercise-(\d+)", tag)
            if m:
                kinds = tags & {"answer", "check", "hidden-check"}
                assert len(kinds) == 1, f"exercise cell needs one of answer/check/hidden-check: {tags}"
                found.setdefault(int(m.group(1)), {}).setdefault(kinds.pop(), []).append(cell.source)
    return found


def setup_source(cells) -> str:
    return next(c.source for c in cells if c.cell_type == "code")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_lab_follows_the_exercise_convention(name):
    cells = cells_of(name)
    found = exercises(cells)
    assert len(found) >= 3 and sorted(found) == list(range(1, len(found) + 1))
    for n, kinds in found.items():
        assert len(kinds["answer"]) == 1 and len(kinds["check"]) == 1, (name, n)
        assert 1 <= len(kinds.get("hidden-check", [])) <= 2, (name, n)
        answer = kinds["answer"][0]
        assert "# BEGIN SOLUTION" in answer and "# END SOLUTION" in answer
        assert "assert" in kinds["check"][0]
        for hidden in kinds["hidden-check"]:
            assert hidden.startswith("# HIDDEN") and "assert" in hidden
    assert not any(c.get("outputs") for c in cells if c.cell_type == "code"), "commit labs without outputs"
    assert "Learning goals" in cells[0].source


@pytest.mark.parametrize("name, n", sorted(WRONG))
def test_checks_accept_the_answer_and_reject_a_wrong_one(name, n):
    cells = cells_of(name)
    ex = exercises(cells)[n]
    right: dict = {}
    exec(setup_source(cells), right)
    exec(ex["answer"][0], right)
    exec(ex["check"][0], right)
    for hidden in ex["hidden-check"]:
        exec(hidden, right)
    wrong: dict = {}
    exec(setup_source(cells), wrong)
    exec(WRONG[(name, n)], wrong)
    with pytest.raises(AssertionError):  # a question pays only when its check and hidden checks all pass
        exec(ex["check"][0], wrong)
        for hidden in ex["hidden-check"]:
            exec(hidden, wrong)
