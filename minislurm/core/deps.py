"""``-d/--dependency`` expressions: ``afterok:12:13,afterany:14`` (AND) or ``...?...`` (OR).

Slurm checks the syntax in the controller and answers every malformed request with the one
string ``Job dependency problem`` (ESLURM_DEPENDENCY), which sbatch prints as
``Batch job submission failed: Job dependency problem``.  Whether the named jobs exist is a
separate, later check that needs the job table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from minislurm.core.errors import DEPENDENCY

TYPES = ("after", "afterany", "afterok", "afternotok", "aftercorr", "afterburstbuffer")


@dataclass(frozen=True, slots=True)
class Dependency:
    """``-d type:id[:id][,type:id...]``: ``any_of`` is True for ``?``-joined lists (OR)."""

    terms: tuple[tuple[str, tuple[int, ...]], ...]
    any_of: bool = False

    def __str__(self) -> str:
        parts = [t if t == "singleton" else f"{t}:{':'.join(map(str, ids))}" for t, ids in self.terms]
        return ("?" if self.any_of else ",").join(parts)


_BARE_IDS = re.compile(r"\d+(?::\d+)*", re.ASCII)
_ID = re.compile(r"(\d+)(?:\+(\d+))?", re.ASCII)


def _ids(kind: str, rest: str) -> tuple[int, ...]:
    ids = []
    for tok in rest.split(":"):
        m = _ID.fullmatch(tok)
        # Only plain ``after`` takes a ``+minutes`` delay; minislurm accepts and ignores it.
        if not m or (m.group(2) is not None and kind != "after"):
            raise ValueError(DEPENDENCY)
        ids.append(int(m.group(1)))
    return tuple(ids)


def parse_dependency(text: str) -> Dependency:
    """Parse a dependency list; raise ValueError(``Job dependency problem``) when malformed.

    A bare id list ``123:456`` is the old form of ``afterany:123:456``.  Types are
    case-insensitive.  ``,`` and ``?`` may not be mixed in one list.
    """
    if "," in text and "?" in text:
        raise ValueError(DEPENDENCY)
    any_of = "?" in text
    terms: list[tuple[str, tuple[int, ...]]] = []
    for part in text.split("?" if any_of else ","):
        if part.lower() == "singleton":
            terms.append(("singleton", ()))
            continue
        if _BARE_IDS.fullmatch(part):
            terms.append(("afterany", tuple(int(x) for x in part.split(":"))))
            continue
        kind, colon, rest = part.partition(":")
        kind = kind.lower()
        if kind not in TYPES or not colon:
            raise ValueError(DEPENDENCY)
        terms.append((kind, _ids(kind, rest)))
    return Dependency(terms=tuple(terms), any_of=any_of)
