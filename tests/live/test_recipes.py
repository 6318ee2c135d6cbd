"""What a learner is told to type runs as printed (issue 25 item 3).

The recipes are read from the pages, not copied here: in a chapter a ``{code-block} bash``
with ``:class: recipe``, in a lab notebook the fenced block of a markdown cell tagged
``recipe``.  bash runs one as typed at a prompt (``-e``: a line that fails stops it), in an
empty folder, with the project's commands on PATH.  The frontier recipe runs at full size, 256
nodes (about 45 s on two busy cores); ``NODES=32`` in the environment runs the quicker try its
first line offers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER, LAB = ROOT / "book" / "08-at-scale.md", ROOT / "labs" / "08b-scenario-1.ipynb"


def recipes(page: Path) -> list[str]:
    """The recipe blocks of a chapter (MyST) or a lab notebook, in page order."""
    if page.suffix == ".md":
        return re.findall(r"^```\{code-block\} bash\n:class: recipe\n\n(.*?)^```$", page.read_text(), re.S | re.M)
    cells = json.loads(page.read_text())["cells"]
    return [block for c in cells if "recipe" in c["metadata"].get("tags", [])
            for block in re.findall(r"^```[a-z]*\n(.*?)^```$", "".join(c["source"]), re.S | re.M)]


def test_the_chapter_and_the_lab_print_one_recipe_the_same():
    assert len(recipes(CHAPTER)) == 1 and recipes(LAB) == recipes(CHAPTER)


@pytest.mark.timeout(600)
def test_the_frontier_recipe_runs_as_printed(tmp_path):
    (recipe,) = recipes(CHAPTER)  # the lab prints the same (above)
    nodes = int(os.environ.get("NODES", "256"))  # the recipe's own default
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    try:
        r = subprocess.run(["bash", "-e", "-c", recipe], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=540)
    finally:  # its last line stops the cluster; a recipe that failed before it leaves it running
        if (tmp_path / "frontier-cluster").exists():
            subprocess.run([Path(sys.executable).parent / "minislurm", "cluster", "down", "--dir", "frontier-cluster"],
                           cwd=tmp_path, env=env, capture_output=True, timeout=120)
    typed = r.stdout + r.stderr
    assert r.returncode == 0, typed[-4000:]
    (log,) = tmp_path.glob("frontier-*.out")
    assert "No such file or directory" not in typed + log.read_text()
    assert re.findall(r"^\d+ +(\S+) ", typed, re.M) == ["NODE_FAIL", "COMPLETED"]  # sacct -D -X: both runs
    assert len(list((tmp_path / "ckpt").iterdir())) == nodes - 16  # one checkpoint per task, one task per node
    starts = [int(s) for s in re.findall(r"task 0 starts at step (\d+)", log.read_text())]
    assert starts[0] == 0 and starts[1] >= 10 and "task 0 done at step 150" in log.read_text()
