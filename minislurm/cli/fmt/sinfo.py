"""sinfo's output, from PartitionView and NodeView dicts.

Formats (src/sinfo/opts.c, as long-format strings there; the ``%`` equivalents are):

* default ``%#P %.5a %.10l %.6D %.6t %N``; ``-l`` ``%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D
  %.11T %.11i %N`` (and a date line first);
* ``-s`` ``%#P %.5a %.10l %.16F %N``;
* ``-N`` ``%#N %.6D %.#P %6t`` (the partition is right-justified there); ``-N -l`` ``%#N %.6D
  %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E``;
* ``-R`` ``%20E %9u %19H %N``; ``-R -l`` ``%20E %12U %19H %6t %N``.

``#`` widths grow to the longest partition name (its ``*`` included) or node list, never
below 9.  Rows group nodes of one partition with the same value of every grouped field
(state, reason, ...), in configuration order of the partitions, then by node state from
the highest numeric state down (``-S #P,-t``); ``-N`` rows are one per node and partition,
sorted by node name.  Optional NodeView keys: ``reason_user``, ``reason_time``,
``sockets``, ``cores_per_socket``, ``threads_per_core``, ``features``, ``weight``.
"""

from __future__ import annotations

from minislurm.cli.fmt.fields import Field, cell, ctime, natural_key, parse_format, secs, timestamp
from minislurm.core.hostlist import compress, expand

DEFAULT = "%#P %.5a %.10l %.6D %.6t %N"
LONG = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %.11i %N"
SUMMARIZE = "%#P %.5a %.10l %.16F %N"
NODE = "%#N %.6D %.#P %6t"
NODE_LONG = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"
REASONS = "%20E %9u %19H %N"
REASONS_LONG = "%20E %12U %19H %6t %N"
MIN_FIELD = 9

_LONG_STATE = {"idle": "idle", "mix": "mixed", "alloc": "allocated", "down": "down", "drain": "drained",
               "drng": "draining", "comp": "completing", "fail": "fail", "unk": "unknown",
               "resv": "reserved", "maint": "maint"}
# Slurm's numeric node states (base + flag bits), for "-t" ordering
_STATE_NUM = {"unk": 0, "down": 1, "idle": 2, "alloc": 3, "mix": 5, "drain": 2 | 0x200,
              "drng": 3 | 0x200, "comp": 3 | 0x400, "fail": 1 | 0x2000, "resv": 2 | 0x100, "maint": 2 | 0x4000}
_NO_RESPOND = 0x800
_PART_FIELDS = set("PRaglLsrhiIp")
_HEADERS = {"a": "AVAIL", "c": "CPUS", "C": "CPUS(A/I/O/T)", "d": "TMP_DISK", "D": "NODES",
            "E": "REASON", "f": "AVAIL_FEATURES", "F": "NODES(A/I/O/T)", "A": "NODES(A/I)",
            "g": "GROUPS", "G": "GRES", "h": "OVERSUBSCRIBE", "H": "TIMESTAMP", "i": "RESERVATION",
            "l": "TIMELIMIT", "L": "DEFAULTTIME", "m": "MEMORY", "N": "NODELIST", "P": "PARTITION",
            "R": "PARTITION", "r": "ROOT", "s": "JOB_SIZE", "t": "STATE", "T": "STATE", "u": "USER",
            "U": "USER", "w": "WEIGHT", "z": "S:C:T", "p": "PRIO_TIER", "I": "PRIO_JOB_FACTOR"}


def node_state(node: dict, long: bool = False) -> str:
    """``idle``, ``mix``, ``drain``, ... (or the long words), ``*`` when not responding."""
    base = node.get("state", "unk")
    text = _LONG_STATE.get(base, base) if long else base
    return text + ("*" if "NOT_RESPONDING" in node.get("flags", ()) else "")


def _state_num(node: dict) -> int:
    num = _STATE_NUM.get(node.get("state", "unk"), 0)
    return num | (_NO_RESPOND if "NOT_RESPONDING" in node.get("flags", ()) else 0)


def exact_units(num: int) -> str:
    """A count as sinfo prints it by default: in K, M, ... while that loses nothing (a half
    counts: 1536 is ``1.50K``); ``--noconvert`` prints the plain number."""
    unit, value = 0, float(num)
    while value >= 1024 and int(value) % 512 == 0:
        value, unit = value / 1024, unit + 1
    text = str(int(value)) if value == int(value) else f"{value:.2f}"
    return text + " KMGTP"[unit] if unit else text


def _min_plus(values: list, convert: bool = False) -> str:
    """sinfo without ``-e``: the smallest value, with ``+`` when the group is not uniform."""
    lo, hi = min(values), max(values)
    text = exact_units(lo) if convert else str(lo)
    return text if lo == hi else f"{text}+"


def _limit(seconds: float | None) -> str:
    return "infinite" if seconds is None else secs(seconds)


def _aiot(nodes: list[dict]) -> tuple[int, int, int, int]:
    a = i = o = 0
    for n in nodes:
        state = n.get("state")
        if state in ("down", "drain", "drng", "fail", "unk") or "DRAIN" in n.get("flags", ()):
            o += 1
        elif state in ("alloc", "mix", "comp"):
            a += 1
        else:
            i += 1
    return a, i, o, len(nodes)


def _value(letter: str, part: dict | None, nodes: list[dict], convert: bool = False) -> str:
    first = nodes[0] if nodes else {}
    if letter in ("P", "R"):
        return part["name"] + ("*" if letter == "P" and part.get("default") else "") if part else "n/a"
    if letter == "a":
        return part.get("state", "UP").lower() if part else "n/a"
    if letter == "l":
        return _limit(part.get("max_time")) if part else "n/a"
    if letter == "L":
        return ("n/a" if not part else "n/a" if part.get("default_time") is None
                else secs(part["default_time"]))
    if letter == "s":
        mx = part.get("max_nodes") if part else None
        return "1-infinite" if mx is None else ("1" if mx == 1 else f"1-{exact_units(mx) if convert else mx}")
    if letter == "r":
        return "no"
    if letter == "h":
        return "NO"
    if letter == "g":
        return "all"
    if letter == "i":
        return ""
    if letter == "p":
        return str(part.get("priority_tier", 1)) if part else "n/a"
    if letter == "I":
        return str(part.get("priority_job_factor", 1)) if part else "n/a"
    if letter == "D":
        return str(len(nodes))
    if letter == "N":
        return compress(n["name"] for n in nodes)
    if letter in ("t", "T"):
        return node_state(first, letter == "T") if nodes else "n/a"
    if letter == "F":
        return "/".join(map(str, _aiot(nodes)))
    if letter == "A":
        a, i, _, _ = _aiot(nodes)
        return f"{a}/{i}"
    if letter == "C":
        alloc = sum(n.get("alloc_cpus", 0) for n in nodes)
        total = sum(n.get("cpus", 0) for n in nodes)
        other = sum(n.get("cpus", 0) for n in nodes if _aiot([n])[2])
        return f"{alloc}/{total - alloc - other}/{other}/{total}"
    if not nodes:
        return "n/a" if letter not in "EuUH" else ""
    if letter == "c":
        return _min_plus([n.get("cpus", 0) for n in nodes], convert)
    if letter == "m":
        return _min_plus([n.get("real_memory", 0) for n in nodes])
    if letter == "d":
        return "0"
    if letter == "w":
        return _min_plus([n.get("weight", 1) for n in nodes])
    if letter == "f":
        return first.get("features") or "(null)"
    if letter == "G":
        return first.get("gres") or "(null)"
    if letter == "z":
        cpus = first.get("cpus", 1)
        return (f"{first.get('sockets', cpus)}:{first.get('cores_per_socket', 1)}:"
                f"{first.get('threads_per_core', 1)}")
    if letter == "E":
        return first.get("reason") or "none"
    if letter in ("u", "U"):
        return first.get("reason_user") or "Unknown"
    if letter == "H":
        return timestamp(first.get("reason_time"), "Unknown")
    raise ValueError(f"Invalid node format specification: {letter}")


def _group_key(fields: list[Field], node: dict, exact: bool) -> tuple:
    key = []
    for f in fields:
        if f.letter in "tT":
            key.append(node_state(node))
        elif f.letter == "E":
            key.append(node.get("reason") or "none")
        elif f.letter in "uU":
            key.append(node.get("reason_user"))
        elif f.letter == "H":
            key.append(node.get("reason_time"))
        elif f.letter in "fGz" or (exact and f.letter in "cmw"):
            key.append(_value(f.letter, None, [node]))
    return tuple(key)


def _is_reason_node(node: dict) -> bool:
    return node.get("state") in ("down", "drain", "drng", "fail") or "DRAIN" in node.get("flags", ())


def format_partitions(parts: list[dict], nodes: list[dict], *, fmt: str | None = None,
                      node_oriented: bool = False, long: bool = False, summarize: bool = False,
                      list_reasons: bool = False, noheader: bool = False, exact: bool = False,
                      now: float | None = None, noconvert: bool = False) -> str:
    """The text sinfo prints.  ``parts`` in slurm.conf order; ``now`` only for ``-l``'s date line;
    counts of CPUs and nodes in K units where exact unless ``noconvert``."""
    if fmt is None:
        if summarize:
            fmt = SUMMARIZE
        elif node_oriented:
            fmt = NODE_LONG if long else NODE
        elif list_reasons:
            fmt = REASONS_LONG if long else REASONS
        else:
            fmt = LONG if long else DEFAULT
    prefix, fields = parse_format(fmt)
    by_name = {n["name"]: n for n in nodes}
    uses_part = any(f.letter in _PART_FIELDS for f in fields)
    rows: list[tuple[dict | None, list[dict]]] = []
    for part in (parts if uses_part else [None]):
        members = ([by_name[h] for h in expand(part.get("nodes") or "") if h in by_name] if part
                   else list(nodes))
        if list_reasons:
            members = [n for n in members if _is_reason_node(n)]
        if node_oriented:
            rows.extend((part, [n]) for n in members)
            continue
        if not members and part is not None and not list_reasons:
            rows.append((part, []))
            continue
        groups: dict[tuple, list[dict]] = {}
        for n in members:
            key = () if summarize else _group_key(fields, n, exact)
            groups.setdefault(key, []).append(n)
        part_rows = sorted(groups.values(), key=lambda g: _state_num(g[0]), reverse=True)
        rows.extend((part, g) for g in part_rows)
    if node_oriented:
        rows.sort(key=lambda r: natural_key(r[1][0]["name"]))
    values = [[_value(f.letter, p, ns, not noconvert) for f in fields] for p, ns in rows]
    widths = []
    for i, f in enumerate(fields):
        if not f.grow:
            widths.append(f.width)
            continue
        widths.append(max([MIN_FIELD] + [len(v[i]) for v in values]))
    lines = []
    if not noheader:
        if long and now is not None:
            lines.append(ctime(now))
        lines.append(prefix + "".join(cell(_HEADERS.get(f.letter, "?"), w, f.right) + f.suffix
                                      for f, w in zip(fields, widths)))
    for (part, _), v in zip(rows, values):
        for i, (f, w) in enumerate(zip(fields, widths)):
            if f.letter == "P" and part and part.get("default") and 0 < w <= len(part["name"]):
                v[i] = part["name"][:w - 1] + "*"  # the default mark survives the cut
        lines.append(prefix + "".join(cell(text, w, f.right) + f.suffix
                                      for text, f, w in zip(v, fields, widths)))
    return "".join(line + "\n" for line in lines)
