"""``--array`` index expressions: ``0-15``, ``0,6,16-32``, ``0-15:4`` and a ``%N`` throttle.

Slurm keeps the indices in a bitmap, so the result is sorted and free of duplicates whatever
order the user wrote (``3,1,1`` is ``1,3``).  Every index must be ``>= 0`` and
``< MaxArraySize`` (default 1001).  Any problem gives Slurm's single error string; the
controller reports it as ``Batch job submission failed: Invalid job array specification``.
"""

from __future__ import annotations

import re

from minislurm.core.spec import ArraySpec

INVALID_ARRAY = "Invalid job array specification"
DEFAULT_MAX_ARRAY_SIZE = 1001

_ITEM = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?", re.ASCII)


def parse_array(text: str, max_array_size: int = DEFAULT_MAX_ARRAY_SIZE) -> ArraySpec:
    """Parse ``--array=<indexes>[%<max running>]``; raise ValueError(INVALID_ARRAY) when invalid.

    A throttle of ``%0`` means "no limit", as it does for Slurm's ``ArrayTaskThrottle``.
    """
    body, percent, throttle = text.partition("%")
    max_running: int | None = None
    if percent:
        if not re.fullmatch(r"[0-9]+", throttle):
            raise ValueError(INVALID_ARRAY)
        max_running = int(throttle) or None
    indices: set[int] = set()
    for item in body.split(","):
        m = _ITEM.fullmatch(item)
        if not m:
            raise ValueError(INVALID_ARRAY)
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) is not None else first
        step = int(m.group(3)) if m.group(3) is not None else 1
        if step < 1 or last < first or last >= max_array_size:
            raise ValueError(INVALID_ARRAY)
        indices.update(range(first, last + 1, step))
    return ArraySpec(indices=tuple(sorted(indices)), max_running=max_running, text=text)
