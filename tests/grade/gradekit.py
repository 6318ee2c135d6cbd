"""Helpers for the grading tests: run ``minislurm`` as an instructor would, and write submissions
from the student notebooks (answer cells filled with given code)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from minislurm.grade.assign import with_answers

ROOT = Path(__file__).resolve().parents[2]
LABS = sorted(p.stem for p in (ROOT / "labs").glob("*.ipynb"))


def processes(keep) -> list[list[bytes]]:
    """The command lines (argv) of this machine's live processes that ``keep(pid, argv)`` keeps."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if keep(pid, argv):
                found.append(argv)
        except OSError:  # it ended meanwhile
            continue
    return found


def minislurm(*args: str, timeout: float = 300, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``minislurm ARGS`` as an instructor would, from the repository root (``tmpdir``: its
    TMPDIR, which every process of a local grading run inherits)."""
    env = {**os.environ, "TMPDIR": str(tmpdir)} if tmpdir else None
    return subprocess.run([sys.executable, "-m", "minislurm.cli.main", *args], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


def worked_answers(lab: str) -> list[str]:
    """The lab's own answer cells (the worked solutions), in exercise order."""
    nb = nbformat.read(ROOT / "labs" / f"{lab}.ipynb", as_version=4)
    return [c.source for c in nb.cells if "answer" in c.metadata.get("tags", [])]


def write_submission(student_nb: Path, path: Path, answers: list[str | None]) -> Path:
    """The student notebook with its answer cells replaced (None: left blank)."""
    nb = nbformat.read(student_nb, as_version=4)
    blanks = [c.source for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
    assert len(blanks) == len(answers)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(with_answers(nb, [a if a is not None else b for a, b in zip(answers, blanks)]), path)
    return path
