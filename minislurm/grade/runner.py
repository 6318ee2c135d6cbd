"""Grade ONE submission with ``otter run``; the process :mod:`.sandbox` starts for each submission.

    python -m minislurm.grade.runner SUBMISSION.ipynb AUTOGRADER.zip RESULT.json --cell-timeout S

It runs in a throwaway folder (locally, or inside the grading container) and writes RESULT.json::

    {"questions": {"exercise-1": {"score": 1, "possible": 2, "failed": ["..."]}, ...},
     "notes": {"exercise-2": "the answer cell ran past the 5 s cell time limit"},
     "error": null}

or ``{"error": "..."}`` when the submission could not be graded at all.

Why a wrapper and not the ``otter run`` command: ``otter run`` executes the notebook with no time
limit per cell, so one ``while True: pass`` would cost the whole submission.  Here otter's
executor gets a per-cell limit with ``interrupt_on_timeout``: the looping cell is interrupted
(``KeyboardInterrupt``), execution goes on with the next cell (otter ignores cell errors), and
only the question whose answer never got defined loses its points.  The grading itself is
``otter.run.main``, which is what ``otter run`` calls.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

from minislurm.grade.quick import ipython_dir, skip_slow_imports

CHECK_CALL = re.compile(r"""grader\.check\(\s*["']([^"']+)["']\s*\)""")
ANSWER_TAG = "otter_answer_cell"


# Cells otter adds or locks (its imports, grader.check calls, the final test run): they are the
# grader's, not the student's, and only the whole-submission limit bounds them, so a slow import
# of otter on a busy machine is never mistaken for a student's endless loop.
GRADER_CELL = re.compile(r"\s*(# Initialize Otter|from otter import Notebook as |import sys\nsys\.path\.append\("
                         r"|from otter\.execute import Checker|notebook_\w+\(\)\.check\(|grader\.check\()")


def cell_limit(seconds: float):
    """nbclient's ``timeout_func``: ``seconds`` for the student's cells, none for the grader's."""
    def limit(cell) -> int | None:
        return None if GRADER_CELL.match(cell.get("source", "")) else max(1, int(round(seconds)))
    return limit


def limit_cells(seconds: float) -> None:
    """Give otter's notebook executor a per-cell time limit that interrupts and goes on."""
    import otter.execute
    from traitlets.config import Config

    def config() -> Config:
        return Config({"ExecutePreprocessor": {"timeout_func": cell_limit(seconds),
                                               "interrupt_on_timeout": True}})

    otter.execute.Config = config  # grade_notebook() builds its executor from Config()


def notes_from(executed, cell_timeout: float) -> dict[str, str]:
    """Why answer cells failed, per question: the error of the answer cells before each check."""
    notes: dict[str, str] = {}
    pending: list[str] = []
    for cell in getattr(executed, "cells", []):
        if cell.get("cell_type") != "code":
            continue
        m = CHECK_CALL.search(cell.get("source", ""))
        if m:
            if pending:
                notes[m.group(1)] = "; ".join(pending)
            pending = []
            continue
        if ANSWER_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") != "error":
                continue
            if out.get("ename") == "KeyboardInterrupt":
                pending.append(f"the answer cell ran past the {cell_timeout:g} s cell time limit")
            else:
                value = str(out.get("evalue", ""))[:200]
                pending.append(f"the answer cell raised {out.get('ename')}: {value}")
    return notes


def summarize(results, cell_timeout: float) -> dict:
    if results.catastrophic_error is not None:
        return {"error": f"grading failed: {results.catastrophic_error!r}"}
    questions = {}
    for name, tf in results.results.items():
        failed = [r.message.strip().splitlines()[-1] for r in tf.test_case_results if not r.passed]
        questions[name] = {"score": tf.score, "possible": tf.possible, "failed": failed}
    return {"questions": questions, "notes": notes_from(results.notebook, cell_timeout), "error": None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minislurm.grade.runner")
    p.add_argument("submission")
    p.add_argument("autograder")
    p.add_argument("result")
    p.add_argument("--cell-timeout", type=float, default=120.0)
    args = p.parse_args(argv)
    skip_slow_imports()
    ipython = Path(tempfile.mkdtemp(prefix="ipython-"))
    os.environ["IPYTHONDIR"] = str(ipython_dir(ipython))  # for the kernel
    try:
        limit_cells(args.cell_timeout)
        from otter.run import main as otter_run

        results = otter_run(args.submission, autograder=args.autograder, output_dir=None, no_logo=True)
        out = summarize(results, args.cell_timeout)
    except Exception as e:  # noqa: BLE001 - any failure is this submission's, reported, not raised
        traceback.print_exc()
        msg = str(e).strip().splitlines()
        out = {"error": f"{type(e).__name__}: {msg[-1] if msg else ''}"[:500]}
    finally:
        shutil.rmtree(ipython, ignore_errors=True)
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    return 0 if out.get("error") is None else 1


if __name__ == "__main__":
    sys.exit(main())
