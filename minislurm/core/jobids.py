"""The job ids that ``squeue -j`` and ``sacct -j`` take: ``12`` (job 12, or every task of array
12), ``12_3`` (task 3 of array 12 only) and ``12.batch``/``12.0`` (a step: its job, here).

The controller is asked for the base ids; the commands then keep only the selected tasks.
"""

from __future__ import annotations

import re

from minislurm.core.hostlist import expand

_SELECTOR = re.compile(r"(\d+)(?:_(\d+))?(?:\.\S*)?", re.ASCII)


def parse_selectors(text: str) -> list[tuple[str, int | None]]:
    """``"12,13_2"`` -> ``[("12", None), ("13", 2)]``.  A word that names no job raises
    ValueError with that word, before any request: each command words that refusal its own way
    (``squeue: error: Invalid job id: abc``, ``sacct: fatal: Bad job/step specified: abc``)."""
    out = []
    for item in filter(None, text.split(",")):
        m = _SELECTOR.fullmatch(item)
        if not m:
            raise ValueError(item)
        out.append((m.group(1), int(m.group(2)) if m.group(2) else None))
    return out


def base_ids(selectors: list[tuple[str, int | None]]) -> str:
    return ",".join(dict.fromkeys(base for base, _ in selectors))


def selected(selectors: list[tuple[str, int | None]], job_id: int, array_job_id: int | None,
             array_task_id: int | None, het_job_id: int | None = None) -> bool:
    """Whether a job (or an array task) is one the selectors name; a heterogeneous job's
    leader id names every component."""
    for base, task in selectors:
        if task is None and base in (str(job_id), str(array_job_id), str(het_job_id)):
            return True
        if task is not None and base == str(array_job_id) and task == array_task_id:
            return True
    return False


_TARGET = re.compile(r"(\d+)(?:_(\d+|\[[\d,\-]+\]))?(?:\.\d+)?", re.ASCII)


def job_targets(word: str) -> tuple[int, list[int] | None]:
    """What scancel and scontrol hold|release|requeue|update act on: ``12`` (the job, or every
    task of array 12), ``12_3`` or ``12_[1-3,7]`` (those tasks) -> (12, None) or (12, [tasks]).
    Raises ValueError on anything else."""
    m = _TARGET.fullmatch(word)
    if not m:
        raise ValueError(f"Invalid job id {word}")
    part = m.group(2)
    if not part:
        return int(m.group(1)), None
    return int(m.group(1)), [int(h[1:]) for h in expand("x" + part)] if part.startswith("[") else [int(part)]


def split_job_list(text: str) -> list[str]:
    """``12,13_[1,3]`` -> ``["12", "13_[1,3]"]``: commas inside brackets are a task list's."""
    out, depth, word = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(word)
            word = ""
        else:
            word += ch
    return [w for w in out + [word] if w]
