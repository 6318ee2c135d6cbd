"""Write example submissions of lab 5 for `make grade-demo`: what a class hands in, good and bad.

    python examples/grading/make_submissions.py STUDENT_NOTEBOOK OUT_DIR

STUDENT_NOTEBOOK is `minislurm grade assign`'s student version of labs/05-priority.ipynb; each
submission is a copy with its four answer cells filled in:

    alice  the worked answers                                   -> 8/8
    bob    weights that pass exercise 2's check, not its hidden one -> 6/8 (all or nothing per question)
    carol  exercise 1 raises, exercise 2 loops forever, exercise 3 prints garbage,
           exercise 4 holds the sweep (it never runs)           -> 0/8
    dave   a notebook cut short (not valid JSON)                -> FAILED, 0/8

Exercise 4 runs each answer on a live minislurm cluster: a few seconds a submission.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import nbformat

SUBMISSIONS = {
    "alice": ["ablation_priority = int(1000 * min(30 / (7 * 24), 1.0))",
              "my_weights = Weights(age=0, fairshare=1000, jobsize=10000)",
              "longest_half_life_days = 3",
              'sweep_options = "--nice=500"'],
    "bob": ["ablation_priority = 178",
            "my_weights = Weights(age=1000, fairshare=1000, jobsize=10000)",
            "longest_half_life_days = 3",
            'sweep_options = "--nice=400"'],
    "carol": ["ablation_priority = 1 / 0",
              "while True:\n    pass",
              "print('\\x1b[31m' + 'garbage ' * 500)\nlongest_half_life_days = 'three'",
              'sweep_options = "--hold"'],
}


def main(student_nb: str, out_dir: str) -> int:
    base = nbformat.read(student_nb, as_version=4)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for student, answers in SUBMISSIONS.items():
        nb = copy.deepcopy(base)
        cells = [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
        for cell, answer in zip(cells, answers, strict=True):
            cell.source = f"# Your answer\n{answer}"
        nbformat.write(nb, out / f"{student}.ipynb")
    text = (out / "alice.ipynb").read_text()
    (out / "dave.ipynb").write_text(text[: len(text) // 2])  # the upload broke off
    print(f"wrote {len(SUBMISSIONS) + 1} submissions to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
