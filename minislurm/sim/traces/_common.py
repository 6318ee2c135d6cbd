"""Shared pieces of the trace readers: the record, the result, line sources, problem tallies.

Readers never raise on a bad line: they skip it and tally the problem, so one broken row in a
100,000-row trace costs a warning, not the replay.  File-level mistakes (an unknown header, a bad
argument) do raise ``ValueError``, because there is nothing sensible to replay.
"""

from __future__ import annotations

import csv
import gzip
import math
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

#: A path (plain or gzip, sniffed by magic bytes) or anything yielding text lines (a text stream).
Source = str | os.PathLike[str] | Iterable[str]

GZIP_MAGIC = b"\x1f\x8b"


@dataclass(slots=True)
class TraceJob:
    """One job to replay, already mapped onto the simulated machine's node shape."""

    job_id: int
    submit: float  # seconds after the trace's first (kept) submit, which is 0
    runtime: float  # actual run time, seconds (> 0, never above time_limit)
    time_limit: float  # seconds: requested time, or the estimate model's value
    nodes: int  # node count
    cpus_per_node: int
    gpus_per_node: int
    mem_per_node: int = 0  # MB, 0 = not tracked
    user: str = "user"
    account: str = "default"
    partition: str | None = None
    reservation: str | None = None  # runs only inside this advance reservation (--reservation)
    dependency: object | None = None  # a core.job.Dependency on earlier records' trace ids (--dependency)
    array: object | None = None  # a core.spec.ArraySpec: tasks alike, each of this runtime (--array)


@dataclass(slots=True)
class TraceReadResult:
    """What a reader produced.

    ``warnings`` describe skipped lines (one entry per problem, with a count and the first line
    number); ``notes`` describe kept lines the reader had to adjust (clamped runtimes, fractional
    GPUs rounded up), in the same form.  ``clamped`` counts jobs whose runtime was cut to the limit.
    """

    jobs: list[TraceJob]
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    clamped: int = 0
    fmt: str = ""


class Tally:
    """Counts problems by kind and remembers the first line number of each."""

    __slots__ = ("_count", "_first")

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._first: dict[str, int] = {}

    def add(self, kind: str, line_no: int) -> None:
        if kind in self._count:
            self._count[kind] += 1
        else:
            self._count[kind] = 1
            self._first[kind] = line_no

    def count(self, kind: str) -> int:
        return self._count.get(kind, 0)

    @property
    def total(self) -> int:
        return sum(self._count.values())

    def messages(self) -> list[str]:
        return [
            f"{kind}: {n} line{'s' if n != 1 else ''}, first at line {self._first[kind]}"
            for kind, n in self._count.items()
        ]


CLAMPED = "runtime above time limit, clamped to the limit"


def finish(jobs: list[TraceJob], bad: Tally, notes: Tally, fmt: str) -> TraceReadResult:
    """Sort by (submit, id) so replays are deterministic, shift so the first submit is 0 (Alea's
    files hold Unix times, not offsets), and package the tallies."""
    jobs.sort(key=lambda j: (j.submit, j.job_id))
    if jobs and jobs[0].submit != 0:
        start = jobs[0].submit
        for job in jobs:
            job.submit -= start
    return TraceReadResult(jobs=jobs, skipped=bad.total, warnings=bad.messages(),
                           notes=notes.messages(), clamped=notes.count(CLAMPED), fmt=fmt)


def clamp_runtime(runtime: float, limit: float, notes: Tally, line_no: int) -> float:
    """Real Slurm kills a job at its limit (OverTimeLimit=0), so a longer run cannot replay."""
    if runtime > limit:
        notes.add(CLAMPED, line_no)
        return limit
    return runtime


@contextmanager
def open_lines(source: Source) -> Iterator[Iterable[str]]:
    """Yield an iterable of text lines; paths are opened (gunzipped when they start gzip-magic)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        with open(path, "rb") as raw:
            gz = raw.read(2) == GZIP_MAGIC
        opener = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as fh:
            yield fh
    else:
        yield source


def check_args(cores_per_node: int, gpus_per_node: int, limit: int | None) -> None:
    if cores_per_node < 1:
        raise ValueError(f"cores_per_node must be >= 1, got {cores_per_node}")
    if gpus_per_node < 0:
        raise ValueError(f"gpus_per_node must be >= 0, got {gpus_per_node}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")


def finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def gpu_share_cpus(gpus: int, gpus_per_node: int, cores_per_node: int) -> int:
    """CPUs in proportion to the node's GPUs (a whole-node GPU job gets the whole node), >= 1."""
    if gpus_per_node <= 0 or gpus <= 0:
        return 1
    return max(1, cores_per_node * gpus // gpus_per_node)


def blank_comments(lines: Iterable[str], prefix: str = "#") -> Iterator[str]:
    """Turn comment lines into empty ones, so csv's ``line_num`` still matches the file."""
    for line in lines:
        yield "\n" if line.lstrip().startswith(prefix) else line


def csv_rows(lines: Iterable[str], bad: Tally, *, quoting: int = csv.QUOTE_MINIMAL
             ) -> Iterator[tuple[int, list[str]]]:
    """(line number, row) pairs; a line the csv module cannot read is tallied, not raised.

    Numeric traces pass ``quoting=csv.QUOTE_NONE`` so a stray quote spoils one row, not the rest
    of the file.
    """
    reader = csv.reader(lines, quoting=quoting)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            bad.add("unreadable CSV line", reader.line_num)
            continue
        yield reader.line_num, row
