"""Workload trace readers: real cluster logs turned into jobs the simulator can replay.

Formats: ``swf`` (Parallel Workloads Archive), ``philly`` (RFold's Philly-derived CSV),
``openb`` (Alibaba GPU pod list), ``native`` (minislurm's lesson CSV).  Every reader takes a path
(gzip is unpacked transparently) or a text stream, maps jobs onto the simulated node shape
(``cores_per_node``, ``gpus_per_node``), skips and tallies unusable lines instead of raising, and
fills missing time limits from an :class:`EstimateModel`.  ``read_trace`` picks the reader.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable

from ._common import Source, TraceJob, TraceReadResult, open_lines
from .estimate import USER_LADDER, EstimateModel, round_up_like_users
from .native import parse_seconds, read_native
from .openb import read_openb
from .philly import read_philly
from .swf import read_machines, read_swf

__all__ = [
    "EstimateModel", "FORMATS", "TraceJob", "TraceReadResult", "USER_LADDER", "detect_format",
    "parse_seconds", "read_machines", "read_native", "read_openb", "read_philly", "read_swf",
    "read_trace", "round_up_like_users",
]

FORMATS: dict[str, Callable[..., TraceReadResult]] = {
    "swf": read_swf, "philly": read_philly, "openb": read_openb, "native": read_native,
}

_PEEK_LINES = 200


def _sniff(line: str) -> str | None:
    """The format a (non-blank) line reveals, "" for a native comment, None when it says nothing."""
    s = line.strip()
    low = s.lower().replace(" ", "")
    if s.startswith(";"):
        return "swf"
    if low.startswith(("#jobid,arrivaltime", "jobid,arrivaltime")):
        return "philly"
    if low.startswith("name,cpu_milli"):
        return "openb"
    if s.startswith("#"):
        return ""
    if low.startswith("id,"):
        return "native"
    fields = s.split()
    if len(fields) >= 18 and all(f.lstrip("-").replace(".", "", 1).isdigit() for f in fields[:18]):
        return "swf"
    return None


def _detect(lines: Iterable[str], name: str | None) -> tuple[str, list[str], Iterable[str]]:
    """Format, the lines already read, and the rest (so a stream is read only once)."""
    it = iter(lines)
    if name is not None:
        base = name.lower().removesuffix(".gz")
        if base.endswith(".swf"):
            return "swf", [], it
    seen: list[str] = []
    comments = False
    for line in itertools.islice(it, _PEEK_LINES):
        seen.append(line)
        if not line.strip():
            continue
        fmt = _sniff(line)
        if fmt == "":
            comments = True
            continue
        if fmt is None:
            break
        return fmt, seen, it
    hint = " (only '#' comments seen)" if comments else ""
    raise ValueError(f"cannot tell the trace format of {name or 'stream'}{hint}; "
                     f"pass fmt= one of {', '.join(FORMATS)}")


def detect_format(source: Source) -> str:
    """``swf``/``philly``/``openb``/``native``: by extension (``.swf[.gz]``), else by the header."""
    name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    with open_lines(source) as lines:
        return _detect(lines, name)[0]


def read_trace(source: Source, fmt: str | None = None, **kw) -> TraceReadResult:
    """Read any supported trace; ``fmt`` None means detect it.  ``kw`` go to the reader
    (``cores_per_node``, ``gpus_per_node``, ``limit``, ``estimate``)."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}; known: {', '.join(FORMATS)}")
    name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else None
    with open_lines(source) as lines:
        if fmt is None:
            fmt, seen, rest = _detect(lines, name)
            lines = itertools.chain(seen, rest)
        return FORMATS[fmt](lines, **kw)
