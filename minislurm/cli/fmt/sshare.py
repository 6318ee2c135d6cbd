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
# -l (long) adds, as on the twin: NormUsage (11) after RawUsage, then LevelFS (10, Fair Tree
# only), GrpTRESMins and TRESRunMins (30 each, cut with "+") after FairShare.
LONG = [("Account", -20), ("User", 10), ("RawShares", 10), ("NormShares", 11), ("RawUsage", 11),
        ("NormUsage", 11), ("EffectvUsage", 13), ("FairShare", 10), ("LevelFS", 10), ("GrpTRESMins", 30),
        ("TRESRunMins", 30)]

# Every field --format knows, in sshare's table order (a name is matched by its leading part,
# the first that fits), with its width (negative: left-justified).
FIELDS = [("Account", -20), ("Cluster", 10), ("EffectvUsage", 13), ("FairShare", 10), ("GrpTRESMins", 30),
          ("GrpTRESRaw", 30), ("ID", 6), ("LevelFS", 10), ("NormShares", 11), ("NormUsage", 11),
          ("Partition", 12), ("RawShares", 10), ("RawUsage", 11), ("TRESRunMins", 30), ("User", 10)]


def parse_fields(text: str) -> list[tuple[str, int]]:
    """``--format=Account,User%20,fairs``: the columns, each ``NAME[%WIDTH]``; ValueError
    names the first unknown one (sshare's ``Invalid field requested``)."""
    out = []
    for word in filter(None, text.split(",")):
        name, pct, width = word.partition("%")
        found = next(((n, w) for n, w in FIELDS if n.lower().startswith(name.lower())), None)
        if found is None:
            raise ValueError(f'Invalid field requested: "{name}"')
        size = int(width) if pct and width.lstrip("-").isdigit() and int(width) else found[1]
        out.append((found[0], size))
    return out


def _cell(text: str, size: int) -> str:
    width = abs(size)
    if len(text) > width:
        text = text[:width - 1] + "+"
    return (text.rjust(width) if size > 0 else text.ljust(width)) + " "


def _f6(x: float | str | None) -> str:
    if isinstance(x, str):  # "inf", as the controller's JSON spells an infinite LevelFS
        return x
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6f}"


def _tres(minutes: dict | None, names: list[str]) -> str:
    return ",".join(f"{name}={(minutes or {}).get(name, 0)}" for name in names)


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
                  parsable: bool = False, parsable2: bool = False, long: bool = False, fair_tree: bool = True,
                  tres: list[str] | None = None, root_run: dict | None = None,
                  fields: list[tuple[str, int]] | None = None, users_only: bool = False,
                  cluster: str | None = None) -> str:
    """The text sshare prints.  ``rows`` are ``fairshare.share_rows``; ``parents`` maps each
    account to its parent account (missing or ``root`` = directly under root), e.g.
    ``{a.account: a.parent for a in tree.nodes.values() if a.user is None}``.  ``long``: the
    columns of ``sshare -l``, with ``tres`` the TRES names in Slurm's order, each row's
    ``tres_run_mins`` (if it has one) and ``root_run`` the root's.  ``fields``: the columns of
    ``--format`` (:func:`parse_fields`) instead; ``users_only`` (``-U``): no root or account
    rows, and the users' accounts then unindented (sshare indents below the accounts it printed)."""
    ordered = _ordered(rows, parents or {})
    top_usage = sum(r.raw_usage for r, depth in ordered if depth == 1)
    header = fields or ([(n, w) for n, w in LONG if fair_tree or n != "LevelFS"] if long else HEADER)
    table = [] if users_only else [{"Account": "root", "Cluster": cluster or "", "NormShares": _f6(0.0), "RawUsage": str(int(top_usage)), "EffectvUsage": _f6(1.0),
              "TRESRunMins": _tres(root_run, tres or [])}]
    for r, depth in ordered:
        if r.user is not None and not all_users and r.user not in (users or ()):
            continue
        if users_only and r.user is None:
            continue
        table.append({"Account": ("" if users_only else " " * depth) + r.account, "User": r.user or "",
                      "Cluster": cluster or "", "RawShares": str(r.raw_shares),
                      "NormShares": _f6(r.norm_shares), "RawUsage": str(int(r.raw_usage)),
                      "NormUsage": _f6(getattr(r, "norm_usage", None)), "EffectvUsage": _f6(r.effective_usage),
                      "FairShare": _f6(r.fairshare) if r.user is not None else "",
                      "LevelFS": _f6(getattr(r, "level_fs", None)),
                      "TRESRunMins": _tres(getattr(r, "tres_run_mins", None), tres or [])})
    cells = [[row.get(name, "") for name, _ in header] for row in table]
    lines = []
    if parsable or parsable2:
        end = "" if parsable2 else "|"
        if not noheader:
            lines.append("|".join(name for name, _ in header) + end)
        lines.extend("|".join(row) + end for row in cells)
    else:
        if not noheader:
            lines.append("".join(f"{name:{'>' if s > 0 else '<'}{abs(s)}} " for name, s in header))
            lines.append("".join("-" * abs(s) + " " for _, s in header))
        lines.extend("".join(_cell(v, s) for v, (_, s) in zip(row, header)) for row in cells)
    return "".join(line + "\n" for line in lines)
