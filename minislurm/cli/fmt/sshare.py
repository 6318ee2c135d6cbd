"""sshare's output, from fair-share ``ShareRow`` records.

Columns (src/sshare, printed with print_fields like sacct): ``Account`` (-20, left),
``User`` (10), ``RawShares`` (10), ``NormShares`` (11), ``RawUsage`` (11),
``EffectvUsage`` (13), ``FairShare`` (10); each followed by one space, a dashes line under
the header, ``--parsable``/``--parsable2`` as in sacct.  Accounts are indented one space
per level below ``root``; a user's row repeats its account one level deeper, and under
each account come its users (by name) before its sub-accounts (by name).  The ``root``
row comes first, with its raw shares and fair-share factor blank; accounts leave the
fair-share factor blank too.  Without ``all_users`` only the accounts and the rows of
``users`` are shown.
"""

from __future__ import annotations

import math

HEADER = [("Account", -20), ("User", 10), ("RawShares", 10), ("NormShares", 11), ("RawUsage", 11),
          ("EffectvUsage", 13), ("FairShare", 10)]


def _cell(text: str, size: int) -> str:
    width = abs(size)
    if len(text) > width:
        text = text[:width - 1] + "+"
    return (text.rjust(width) if size > 0 else text.ljust(width)) + " "


def _f6(x: float | None) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6f}"


def _ordered(rows: list, parents: dict[str, str | None]) -> list[tuple[object, int]]:
    """Rows in sshare's order with their depth: under each account its users first (by name),
    then its sub-accounts (by name), depth first from root."""
    accounts = {r.account: r for r in rows if r.user is None}
    users: dict[str, list] = {}
    for r in rows:
        if r.user is not None:
            users.setdefault(r.account, []).append(r)
    children: dict[str, list[str]] = {}
    for name in accounts:
        parent = parents.get(name) or "root"
        children.setdefault(parent if parent in accounts else "root", []).append(name)
    out: list[tuple[object, int]] = []

    def walk(account: str, depth: int) -> None:
        for u in sorted(users.get(account, []), key=lambda r: r.user):
            out.append((u, depth))
        for name in sorted(children.get(account, [])):
            out.append((accounts[name], depth))
            walk(name, depth + 1)

    walk("root", 1)
    return out


def format_sshare(rows: list, *, all_users: bool = False, noheader: bool = False,
                  parents: dict[str, str | None] | None = None, users: list[str] | None = None,
                  parsable: bool = False, parsable2: bool = False) -> str:
    """The text sshare prints.  ``rows`` are ``fairshare.share_rows``; ``parents`` maps each
    account to its parent account (missing or ``root`` = directly under root), e.g.
    ``{a.account: a.parent for a in tree.nodes.values() if a.user is None}``."""
    ordered = _ordered(rows, parents or {})
    top_usage = sum(r.raw_usage for r, depth in ordered if depth == 1)
    table = [["root", "", "", _f6(0.0), str(int(top_usage)), _f6(1.0), ""]]
    for r, depth in ordered:
        if r.user is not None and not all_users and r.user not in (users or ()):
            continue
        table.append([" " * depth + r.account, r.user or "", str(r.raw_shares), _f6(r.norm_shares),
                      str(int(r.raw_usage)), _f6(r.effective_usage),
                      _f6(r.fairshare) if r.user is not None else ""])
    lines = []
    if parsable or parsable2:
        end = "" if parsable2 else "|"
        if not noheader:
            lines.append("|".join(name for name, _ in HEADER) + end)
        lines.extend("|".join(row) + end for row in table)
    else:
        if not noheader:
            lines.append("".join(f"{name:{'>' if s > 0 else '<'}{abs(s)}} " for name, s in HEADER))
            lines.append("".join("-" * abs(s) + " " for _, s in HEADER))
        lines.extend("".join(_cell(v, s) for v, (_, s) in zip(row, HEADER)) for row in table)
    return "".join(line + "\n" for line in lines)
