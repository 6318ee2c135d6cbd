"""Formatting a column of many records at once, for commands that print thousands of lines.

A column is read for every record in one comprehension, and each distinct value is made text
(converted, escaped, padded or cut) once: 10,000 pending jobs share a handful of partitions,
users, states and reasons.  A column's reader is one of:

* :class:`Key`: one view key with a default, then ``conv`` (the fast path);
* :class:`Via`: ``fn(record, now)``, then ``conv``;
* any function ``(record, now) -> text`` (or ``(text, cut)`` where the field's cut is None).

Each reader is also a plain function of ``(record, now)``, for code that needs one value.
"""

from __future__ import annotations

from minislurm.cli.fmt.fields import Field, cell, printable


class Key:
    """``conv(record.get(key, default))``, read for all records without a call per record."""

    __slots__ = ("key", "default", "conv")

    def __init__(self, key: str, default=None, conv=None):
        self.key, self.default, self.conv = key, default, conv

    def __call__(self, record: dict, now: float):
        value = record.get(self.key, self.default)
        return value if self.conv is None else self.conv(value)


class Via:
    """``conv(fn(record, now))``, with ``conv`` applied once per distinct value."""

    __slots__ = ("fn", "conv")

    def __init__(self, fn, conv):
        self.fn, self.conv = fn, conv

    def __call__(self, record: dict, now: float):
        return self.conv(self.fn(record, now))


def or_text(text: str):
    """A ``conv`` that shows ``text`` for an empty or missing value."""
    return lambda value: value or text


def _raw(read, records: list[dict], now: float) -> tuple[list, object]:
    if isinstance(read, Key):
        key, default = read.key, read.default
        return [r.get(key, default) for r in records], read.conv
    if isinstance(read, Via):
        return [read.fn(r, now) for r in records], read.conv
    return [read(r, now) for r in records], None


def values(read, records: list[dict], now: float) -> list:
    """``read`` for every record (sort keys)."""
    raws, conv = _raw(read, records, now)
    return raws if conv is None else [conv(v) for v in raws]


def cells(read, cut: bool | None, field: Field, records: list[dict], now: float) -> list[str]:
    """One field's text for every record, padded or cut to the field and its suffix added."""
    raws, conv = _raw(read, records, now)
    memo: dict = {}

    def make(raw) -> str:
        text = raw if conv is None else conv(raw)
        text, keep = text if cut is None else (text, cut)
        memo[raw] = out = cell(printable(text), field.width, field.right, keep) + field.suffix
        return out
    return [memo[r] if r in memo else make(r) for r in raws]
