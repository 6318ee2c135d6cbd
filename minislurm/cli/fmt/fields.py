"""The ``%[.][width]<letter>[suffix]`` format strings of squeue, sinfo and sprio.

Behaviour reproduced (from the commands' print code, not copied):

* text before the first ``%`` is printed once, as a prefix;
* each ``%`` starts a field: an optional ``.`` (right-justify), an optional width, one
  letter; everything up to the next ``%`` is a suffix printed after the field;
* runs of ``%`` count as one separator (the commands split the string with ``strtok``);
* a field with a width is padded to it.  Left-justified values are always cut to the
  width; right-justified ones only when the field allows cutting (node lists and
  squeue's times do not), and then the *leading* characters are kept;
* width 0 means "as wide as the value", with no padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from minislurm.core.timefmt import INFINITE


@dataclass(frozen=True)
class Field:
    letter: str
    width: int = 0
    right: bool = False
    suffix: str = ""
    grow: bool = False  # sinfo's "#": width is set from the data


def parse_format(fmt: str) -> tuple[str, list[Field]]:
    """Split a format string into its prefix and its fields."""
    first = fmt.find("%")
    if first < 0:
        return fmt, []
    prefix, fields = fmt[:first], []
    for token in fmt[first:].split("%"):
        if not token:
            continue
        i, right, grow = 0, False, False
        if token[i] == ".":
            right, i = True, i + 1
        if i < len(token) and token[i] == "#":
            grow, i = True, i + 1
        digits = ""
        while i < len(token) and token[i].isdigit():
            digits += token[i]
            i += 1
        if i >= len(token):
            raise ValueError(f"Invalid format specification: %{token}")
        fields.append(Field(token[i], int(digits or 0), right, token[i + 1:], grow))
    return prefix, fields


def cell(value: str, width: int, right: bool, cut: bool = True) -> str:
    """One field's text, padded or cut the way the commands' ``_print_str`` does it."""
    if width <= 0:
        return value
    if right:
        text = value.rjust(width)
        return text[:width] if cut else text
    return value[:width].ljust(width)


def render(prefix: str, fields: list[Field], value) -> str:
    """One output line; ``value(field) -> (text, cut)``."""
    out = [prefix]
    for f in fields:
        text, cut = value(f)
        out.append(cell(text, f.width, f.right, cut) + f.suffix)
    return "".join(out)


def secs(seconds: float) -> str:
    """squeue/sinfo's ``M:SS``, ``H:MM:SS`` or ``D-HH:MM:SS``; ``INVALID`` when negative."""
    if seconds < 0 or seconds > 365 * 86400:
        return "INVALID"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if days:
        return f"{days}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def timestamp(epoch: float | None, none: str = "N/A") -> str:
    """``YYYY-MM-DDTHH:MM:SS`` in local time, or ``none`` when there is no time."""
    if epoch is None or epoch == INFINITE or epoch == 0:
        return none
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%dT%H:%M:%S")


def mem_units(mb: float) -> str:
    """A size in MB the way Slurm prints it with exact unit conversion: ``64G``, ``4000M``.

    The value moves to the next unit only while it divides evenly by 1024, so it stays an
    integer; zero prints as ``0``.
    """
    value = int(mb)
    if value <= 0:
        return "0"
    units = "MGTPE"
    i = 0
    while value % 1024 == 0 and i < len(units) - 1:
        value //= 1024
        i += 1
    return f"{value}{units[i]}"


def ctime(epoch: float) -> str:
    """The date line squeue -l and sinfo -l print first (C's ``ctime``: ``Fri Mar  1 12:00:00 2024``)."""
    when = datetime.fromtimestamp(epoch)
    return when.strftime("%a %b ") + f"{when.day:2d}" + when.strftime(" %H:%M:%S %Y")


def natural_key(name: str) -> tuple:
    """Node names in Slurm's order: a run of digits compares by value."""
    key, num = [], ""
    for ch in name:
        if ch.isdigit():
            num += ch
            continue
        if num:
            key.append((1, int(num), ""))
            num = ""
        key.append((0, 0, ch))
    if num:
        key.append((1, int(num), ""))
    return tuple(key)
