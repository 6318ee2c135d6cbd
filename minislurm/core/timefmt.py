"""Slurm's time formats: ``-t`` limits, ``--begin`` times, and how squeue/sinfo/sacct print times."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta

INFINITE = math.inf
MAX_LIMIT_MINUTES = 2**32 - 2  # Slurm keeps limits as uint32 minutes (0xffffffff is INFINITE)


def parse_time_limit(text: str) -> float:
    """``-t``/``--time`` to whole minutes (``math.inf`` for no limit).

    Accepts ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``, ``days-hours``,
    ``days-hours:minutes`` and ``days-hours:minutes:seconds``; ``-1``, ``INFINITE``,
    ``UNLIMITED`` and ``0`` mean no limit.  Seconds round up to the next minute, as in Slurm.
    More than ``MAX_LIMIT_MINUTES`` (about 8000 years) is invalid.
    """
    s = text.strip()
    if s.upper() in ("INFINITE", "UNLIMITED", "-1"):
        return INFINITE
    days = 0
    if "-" in s:
        d, _, s = s.partition("-")
        if not d.isdigit() or not s:
            raise ValueError(f"Invalid time specification: {text}")
        days = int(d)
        fields = s.split(":")
        if len(fields) > 3 or not all(f.isdigit() for f in fields):
            raise ValueError(f"Invalid time specification: {text}")
        h, m, sec = (list(map(int, fields)) + [0, 0])[:3]
    else:
        fields = s.split(":")
        if not 1 <= len(fields) <= 3 or not all(f.isdigit() for f in fields):
            raise ValueError(f"Invalid time specification: {text}")
        nums = list(map(int, fields))
        if len(nums) == 3:
            h, m, sec = nums
        elif len(nums) == 2:
            h, m, sec = 0, nums[0], nums[1]
        else:
            h, m, sec = 0, nums[0], 0
    total = ((days * 24 + h) * 60 + m) * 60 + sec
    if total == 0:
        return INFINITE
    if total > MAX_LIMIT_MINUTES * 60:
        raise ValueError(f"Invalid time specification: {text}")
    return float(math.ceil(total / 60))


def _split(seconds: float) -> tuple[int, int, int, int]:
    days, rest = divmod(max(0, int(seconds)), 86400)
    h, rest = divmod(rest, 3600)
    return (days, h) + divmod(rest, 60)


def format_duration(seconds: float) -> str:
    """squeue's ``TIME``/``TIME_LIMIT`` style: ``M:SS``, ``H:MM:SS`` or ``D-HH:MM:SS``."""
    if seconds == INFINITE:
        return "UNLIMITED"
    days, h, m, s = _split(seconds)
    if days:
        return f"{days}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def format_limit(seconds: float) -> str:
    """sinfo's ``TIMELIMIT``: like :func:`format_duration` but ``infinite`` for no limit."""
    return "infinite" if seconds == INFINITE else format_duration(seconds)


def format_elapsed(seconds: float) -> str:
    """sacct's ``Elapsed``/``Timelimit``: ``[D-]HH:MM:SS``."""
    if seconds == INFINITE:
        return "UNLIMITED"
    days, h, m, s = _split(seconds)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else f"{h:02d}:{m:02d}:{s:02d}"


def format_timestamp(epoch: float | None) -> str:
    """Slurm's ``YYYY-MM-DDTHH:MM:SS`` in local time; ``Unknown`` when there is none."""
    if epoch is None or epoch == INFINITE:
        return "Unknown"
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%dT%H:%M:%S")


_UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}
_NAMED = {"midnight": (0, 0), "noon": (12, 0), "elevenses": (11, 0), "fika": (15, 0), "teatime": (16, 0)}


def parse_begin(text: str, now: float) -> float:
    """``--begin`` to epoch seconds, relative to ``now``.

    Accepts ``now[{+|-}count[units]]`` (seconds by default; ``-`` is for ``sacct -S now-1hour``), ``HH:MM[:SS]``, ``YYYY-MM-DD[THH:MM[:SS]]``,
    ``MM/DD[/YY]``, ``midnight``/``noon``/``teatime``/... and ``today``/``tomorrow``.
    A bare time of day already past today means tomorrow, as in Slurm.
    """
    s = text.strip().lower()
    base = datetime.fromtimestamp(now)
    m = re.fullmatch(r"now(?:([+-])(\d+)([a-z]*))?", s)
    if m:
        if not m.group(2):
            return now
        unit = m.group(3) or "seconds"
        factor = next((v for k, v in _UNITS.items() if k.startswith(unit) or k[:-1] == unit), None)
        if factor is None:
            raise ValueError(f"Invalid time specification: {text}")
        return now + (1 if m.group(1) == "+" else -1) * int(m.group(2)) * factor
    if s in ("today", "tomorrow"):
        day = base.replace(hour=0, minute=0, second=0, microsecond=0)
        return (day + timedelta(days=1 if s == "tomorrow" else 0)).timestamp()
    if s in _NAMED:
        h, mnt = _NAMED[s]
        when = base.replace(hour=h, minute=mnt, second=0, microsecond=0)
        return (when + timedelta(days=1) if when.timestamp() <= now else when).timestamp()
    m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", s)
    if m:
        when = base.replace(hour=int(m.group(1)), minute=int(m.group(2)),
                            second=int(m.group(3) or 0), microsecond=0)
        return (when + timedelta(days=1) if when.timestamp() <= now else when).timestamp()
    # The date and the time may be parted by T, a space or a dash (torchx: -S1970-01-01-00:00:01).
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[t -](\d{1,2}):(\d{2})(?::(\d{2}))?)?", s)
    if m:
        y, mo, d, h, mi, se = (int(g) if g else 0 for g in m.groups())
        return datetime(y, mo, d, h, mi, se).timestamp()
    m = re.fullmatch(r"(\d{1,2})/(\d{1,2})(?:/(\d{2}))?", s)
    if m:
        year = 2000 + int(m.group(3)) if m.group(3) else base.year
        return datetime(year, int(m.group(1)), int(m.group(2))).timestamp()
    raise ValueError(f"Invalid time specification: {text}")
