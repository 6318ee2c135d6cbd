"""Slurm hostlists: ``gpu[01-04,07],login1`` <-> a list of host names.

Written here rather than taken from python-hostlist because Slurm has two compressions and
that library has one: ``scontrol show hostlist`` keeps the given order and duplicates
(``tux2,tux1,tux2`` -> ``tux[2,1-2]``), while node lists in squeue/sinfo are sorted and unique.
Only the trailing number of a name is ranged, as in Slurm; zero padding is kept.
"""

from __future__ import annotations

import functools

import math
import re

MAX_RANGE = 65536  # MAX_SLURM_NODES: the largest range Slurm will expand

_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


class HostlistError(ValueError):
    pass


def _split_top(expr: str) -> list[str]:
    """Split on commas and whitespace that are outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"Invalid hostlist: {expr}")
        if depth == 0 and (ch == "," or ch.isspace()):
            if cur:
                parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise HostlistError(f"Invalid hostlist: {expr}")
    if cur:
        parts.append("".join(cur))
    return parts


def _expand_ranges(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        lo, sep, hi = item.partition("-")
        if not _number(lo) or (sep and not _number(hi)):
            raise HostlistError(f"Invalid hostlist: {expr}")
        if not sep:
            out.append(lo)
            continue
        a, b = int(lo), int(hi)
        if b < a or b - a >= MAX_RANGE:
            raise HostlistError(f"Invalid hostlist: {expr}")
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        out.extend(f"{i:0{width}d}" for i in range(a, b + 1))
    return out


def expand(expr: str | None) -> list[str]:
    """All host names of a hostlist expression, in order, duplicates kept; at most MAX_RANGE
    of them (``a[1-9999]b[1-9999]`` would be 10**8 names: refused before any is built)."""
    hosts: list[str] = []
    for part in _split_top(expr or ""):
        groups = [_expand_ranges(m.group(1), expr) for m in _BRACKET.finditer(part)]
        if len(hosts) + math.prod(len(g) for g in groups) > MAX_RANGE:
            raise HostlistError(f"Invalid hostlist: {_short(expr)} (more than {MAX_RANGE} hosts)")
        names = [""]
        pos = 0
        for m, group in zip(_BRACKET.finditer(part), groups):
            literal = part[pos:m.start()]
            names = [n + literal + r for n in names for r in group]
            pos = m.end()
        tail = part[pos:]
        if "[" in tail or "]" in tail:
            raise HostlistError(f"Invalid hostlist: {expr}")
        hosts.extend(n + tail for n in names)
    return hosts


def _short(expr: str) -> str:
    return expr if len(expr) <= 60 else expr[:57] + "..."


def _number(text: str) -> bool:
    """Digits a range may hold: ASCII, and few enough to be a number (not a 5000-digit text)."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def _key(name: str) -> tuple[str, int | None, str]:
    m = _TRAILING_NUMBER.match(name)
    if not m or not _number(m.group(2)):  # such a suffix is not ranged: the name stays whole
        return name, None, ""
    return m.group(1), int(m.group(2)), m.group(2)


def _padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def compress(names, sort: bool = True) -> str:
    """The ranged form.  ``sort=True`` sorts (prefix, then number by value) and drops duplicates."""
    return _compress(tuple(names), sort)


@functools.lru_cache(maxsize=256)
def _compress(names: tuple[str, ...], sort: bool) -> str:
    """Remembered: a step on hundreds of nodes asks for the same lists once per node."""
    items = [_key(n) for n in names]
    if sort:
        items = sorted(set(items), key=lambda k: (k[0], k[1] is not None, k[1] or 0, len(k[2])))
    # Build ranges [prefix, lo, hi, width]; a host joins the previous range when it continues it.
    ranges: list[list] = []
    for prefix, num, digits in items:
        if num is not None and ranges:
            last = ranges[-1]
            if last[0] == prefix and last[1] is not None and num == last[2] + 1:
                width = last[3]
                compatible = (width == 0 and not _padded(digits)) or (
                    width == len(digits) or (width == 0 and len(str(last[2])) == len(digits))
                )
                if compatible:
                    last[2] = num
                    if _padded(digits):
                        last[3] = len(digits)
                    continue
        ranges.append([prefix, num, num, len(digits) if num is not None and _padded(digits) else 0])
    # Consecutive ranges with one prefix share a bracket; a lone single host has none.
    groups: list[tuple[str, list[list]]] = []
    for r in ranges:
        if r[1] is not None and groups and groups[-1][0] == r[0] and groups[-1][1][-1][1] is not None:
            groups[-1][1].append(r)
        else:
            groups.append((r[0], [r]))
    out = []
    for prefix, rs in groups:
        if rs[0][1] is None:
            out.append(prefix)
            continue
        texts = []
        for _, lo, hi, width in rs:
            texts.append(f"{lo:0{width}d}" if lo == hi else f"{lo:0{width}d}-{hi:0{width}d}")
        if len(rs) == 1 and rs[0][1] == rs[0][2]:
            out.append(prefix + texts[0])
        else:
            out.append(f"{prefix}[{','.join(texts)}]")
    return ",".join(out)


def first(expr: str) -> str:
    """The first host of a hostlist, without expanding all of it (what MASTER_ADDR needs)."""
    part = _split_top(expr)[0]
    m = _BRACKET.search(part)
    if not m:
        return part
    lead = _expand_ranges(m.group(1).split(",")[0].split("-")[0], expr)[0]
    return first(part[:m.start()] + lead + part[m.end():])
