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

Where minislurm differs, on purpose (a shared cluster prints other users' text):

* a width over :data:`MAX_WIDTH` is refused (``ValueError``).  Slurm pads to any width and,
  past a few million columns, crashes (22.05: ``squeue -o %999999999i`` dies of SIGSEGV; widths
  up to millions print megabytes per line), so a huge width could only hang or flood a terminal;
* control characters in a value (a job name with a newline or an ANSI escape sequence, which
  Slurm prints raw) are shown escaped, ``\\n`` or ``\\x1b``: see :func:`printable`.
"""

from __future__ import annotations

from collections import namedtuple
from datetime import datetime

from minislurm.core.timefmt import INFINITE

MAX_WIDTH = 1024  # the widest field a format may ask for (see the module docstring)

# Characters that would act on the terminal instead of showing: C0 controls, DEL, C1 controls
# (0x80-0x9f: some terminals read 0x9b as CSI), the Unicode line and paragraph separators, and
# the bidirectional overrides and isolates that can make text read differently than it is.
_ESCAPES = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7f, 0xa0)]}
_ESCAPES.update({0x09: "\\t", 0x0a: "\\n", 0x0d: "\\r"})
_ESCAPES.update({c: f"\\u{c:04x}" for c in (0x061c, 0x200e, 0x200f, 0x2028, 0x2029,
                                              *range(0x202a, 0x202f), *range(0x2066, 0x206a))})


def printable(text: str) -> str:
    """``text`` with the characters that would drive the terminal written as escapes.

    Job names, paths and comments come from other users; Slurm prints them as they are, so a
    name like ``$'\\e[2J'`` clears the screen of whoever runs ``squeue``, and one with a newline
    forges a line of output.  Here ``\\n``, ``\\t``, ``\\r`` and ``\\xHH``/``\\uHHHH`` stand in for
    them (a backslash itself is left alone, so plain names print exactly as in Slurm).
    """
    return text if text.isprintable() else text.translate(_ESCAPES)


def check_width(width: int) -> int:
    if width > MAX_WIDTH:
        raise ValueError(f"field width {width} is too large (at most {MAX_WIDTH})")
    return width


# One ``%`` field: letter, width, right-justified, suffix, and sinfo's "#" (width set from the
# data).  A named tuple, not a dataclass: dataclasses costs every command ~5 ms of imports.
Field = namedtuple("Field", "letter width right suffix grow", defaults=(0, False, "", False))


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
        fields.append(Field(token[i], check_width(int(digits or 0)), right, token[i + 1:], grow))
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
        out.append(cell(printable(text), f.width, f.right, cut) + f.suffix)
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


def kib_text(kib: float) -> str:
    """A size in KiB the way seff prints it: ``412.11 MB``, two decimals, the largest unit under 1024."""
    for unit in ("KB", "MB", "GB"):
        if kib < 1024:
            return f"{kib:.2f} {unit}"
        kib /= 1024
    return f"{kib:.2f} TB"


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
