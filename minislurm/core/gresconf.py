"""GRES: slurm.conf's ``Gres=``, gres.conf, and the ``Key=Value`` reader both files share.

gres.conf says which device files back each node's GRES.  minislurm needs only the ``File=`` of
GPUs (one device per GPU, which becomes the node's ``gpu_files``); the counts themselves come
from slurm.conf's ``Gres=``, as in real Slurm, and a disagreement is reported as a warning because
a real slurmd would register the gres.conf count and the controller would drain the node when
that is lower.  ``AutoDetect`` is accepted but not emulated.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from .cluster import ClusterConfig
from .hostlist import HostlistError, compress, expand


class ConfigError(ValueError):
    """A slurm.conf/gres.conf line that cannot be read; the message names file, line and problem."""


_DIRECTIVE = re.compile(r"^\s*#\s*minislurm:(.*)$", re.IGNORECASE)
_PAIR = re.compile(r'([A-Za-z][A-Za-z0-9_.]*)\s*=\s*(?:"([^"]*)"|(\S+))')
_COUNT = re.compile(r"^(\d+)([KMGT]?)$", re.IGNORECASE)
_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def logical_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(first line number, text, is_directive)`` per logical line.

    Comments (from an unescaped ``#``) are dropped and a trailing backslash joins the next
    line, as Slurm's reader does.  A ``#minislurm:`` comment is returned as a directive with
    the text after the colon, so settings real Slurm must not see can live in the same file.
    """
    start, parts = 0, []
    for number, raw in enumerate(text.splitlines(), 1):
        if not parts:
            start = number
            directive = _DIRECTIVE.match(raw)
            if directive:
                yield number, directive.group(1).strip(), True
                continue
        body = re.split(r"(?<!\\)#", raw, maxsplit=1)[0].replace("\\#", "#").rstrip()
        if body.endswith("\\"):
            parts.append(body[:-1])
            continue
        parts.append(body)
        line = " ".join(p.strip() for p in parts).strip()
        parts = []
        if line:
            yield start, line, False
    if parts and " ".join(parts).strip():
        yield start, " ".join(p.strip() for p in parts).strip(), False


def split_pairs(line: str, where: str) -> list[tuple[str, str]]:
    """The ``Key=Value`` pairs of one line, in order; ``Key="a b"`` may quote spaces."""
    pairs, pos = [], 0
    while True:
        while pos < len(line) and line[pos].isspace():
            pos += 1
        if pos == len(line):
            return pairs
        m = _PAIR.match(line, pos)
        if not m:
            raise ConfigError(f"{where}: expected Key=Value, found '{line[pos:].split()[0]}'")
        pairs.append((m.group(1), m.group(2) if m.group(2) is not None else m.group(3)))
        pos = m.end()


def parse_count(text: str) -> int:
    """A GRES count: digits with an optional K/M/G/T suffix (powers of 1024, as in Slurm)."""
    m = _COUNT.match(text)
    if not m:
        raise ValueError(f"'{text}' is not a GRES count")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def expand_or_fail(expr: str, where: str, what: str) -> list[str]:
    try:
        names = expand(expr)
    except HostlistError:
        names = []
    if not names:
        raise ConfigError(f"{where}: {what}={expr} is not a valid hostlist")
    return names


def parse_node_gres(value: str) -> tuple[dict, set[str], list[str]]:
    """``Gres=gpu[:type]:N,shard:8`` -> NodeConfig fields, the GRES names used, warnings."""
    gpus: dict[str | None, int] = {}
    other: dict[str, int] = {}
    for item in filter(None, value.split(",")):
        name, *rest = item.split(":")
        count = parse_count(rest.pop()) if rest and rest[-1][:1].isdigit() else 1
        rest = [r for r in rest if r.lower() != "no_consume"]
        if len(rest) > 1 or not name:
            raise ValueError(f"'{item}' is not name[:type][:count]")
        if name.lower() == "gpu":
            gpus[rest[0] if rest else None] = gpus.get(rest[0] if rest else None, 0) + count
        else:
            other[name.lower()] = other.get(name.lower(), 0) + count
    if None in gpus and len(gpus) > 1:
        raise ValueError("gpu is configured both with and without a type")
    warn = ["GPUs of several types are not modelled; counted as one untyped pool"
            ] if len(gpus) > 1 else []
    fields = {"gpus": sum(gpus.values()), "gres": other,
              "gpu_type": next(iter(gpus)) if len(gpus) == 1 else None}
    return fields, set(other) | ({"gpu"} if gpus else set()), warn


_GRES_KEYS = {"nodename", "name", "type", "file", "count", "cores", "links", "flags",
              "autodetect", "multiplefiles"}
_AUTODETECT = {"nvml", "nvidia", "rsmi", "oneapi", "nrt", "off", "full"}


def apply_gres_conf(cfg: ClusterConfig, text: str, path: str = "gres.conf") -> None:
    """Read gres.conf into ``cfg`` (already filled from slurm.conf): GPU device files, warnings."""
    names = {node.name: node for node in cfg.nodes}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for number, line, directive in logical_lines(text):
        if directive:
            continue
        where = f"{path} line {number}"
        fields: dict[str, str] = {}
        for key, value in split_pairs(line, where):
            if key.lower() not in _GRES_KEYS:
                raise ConfigError(f"{where}: unknown gres.conf key '{key}'")
            fields[key.lower()] = value
        targets = list(cfg.nodes)
        if "nodename" in fields:
            listed = expand_or_fail(fields["nodename"], where, "NodeName")
            missing = [n for n in listed if n not in names]
            if missing:
                cfg.warnings.append(f"{where}: nodes not in slurm.conf are ignored: "
                                    f"{compress(missing)}")
            targets = [names[n] for n in listed if n in names]
        if "autodetect" in fields:
            mode = fields["autodetect"].lower()
            if mode not in _AUTODETECT:
                raise ConfigError(f"{where}: AutoDetect={fields['autodetect']} is not one of "
                                  f"{', '.join(sorted(_AUTODETECT))}")
            if mode != "off":
                cfg.warnings.append(f"{where}: AutoDetect={mode} is not emulated by minislurm; "
                                    "File= lines and slurm.conf Gres counts are used")
        if "name" not in fields:
            if set(fields) - {"nodename", "autodetect"}:
                raise ConfigError(f"{where}: a gres.conf line needs Name=")
            continue
        for key in sorted(set(fields) & {"cores", "links", "flags", "multiplefiles"}):
            cfg.warnings.append(f"{where}: gres.conf key '{key}' is not modelled by minislurm "
                                "(ignored)")
        name = fields["name"].lower()
        if name not in cfg.gres_types:
            raise ConfigError(f"{where}: GRES '{name}' is not declared in GresTypes")
        files = expand_or_fail(fields["file"], where, "File") if "file" in fields else []
        try:
            count = parse_count(fields["count"]) if "count" in fields else len(files) or 1
        except ValueError:
            raise ConfigError(f"{where}: Count={fields['count']} is not a GRES count") from None
        if name == "gpu" and files and count != len(files):
            raise ConfigError(f"{where}: Count={count} but File= names {len(files)} device(s)")
        gtype = fields.get("type")
        for node in targets:
            counts[(node.name, name)] += count
            if name == "gpu":
                node.gpu_files.extend(files)
                if gtype and node.gpu_type and gtype != node.gpu_type:
                    cfg.warnings.append(f"{where}: Type={gtype} but slurm.conf gives {node.name} "
                                        f"gpu type '{node.gpu_type}'")
    _warn_count_mismatch(cfg, names, counts, path)


def _warn_count_mismatch(cfg: ClusterConfig, names, counts, path: str) -> None:
    """One warning per (gres, gres.conf count, slurm.conf count), naming the nodes as a hostlist."""
    groups: dict[tuple[str, int, int], list[str]] = defaultdict(list)
    for (node, name), found in counts.items():
        configured = names[node].gpus if name == "gpu" else names[node].gres.get(name, 0)
        if found != configured:
            groups[(name, found, configured)].append(node)
    for (name, found, configured), nodes in groups.items():
        hint = " (real Slurm drains a node that reports fewer)" if found < configured else ""
        cfg.warnings.append(f"{path}: {compress(nodes)}: gres.conf gives {found} {name} but "
                            f"slurm.conf Gres gives {configured}{hint}")


def render_gres_conf(cfg: ClusterConfig) -> str:
    """gres.conf lines for the GPU device files in ``cfg``; consecutive alike nodes share a line."""
    lines = ["# gres.conf written by minislurm: the device file behind each GPU"]
    run: list = []
    for node in cfg.nodes + [None]:
        if run and (node is None or (node.gpu_type, node.gpu_files)
                    != (run[0].gpu_type, run[0].gpu_files)):
            first = run[0]
            kind = f" Type={first.gpu_type}" if first.gpu_type else ""
            lines.append(f"NodeName={compress([n.name for n in run], sort=False)} Name=gpu{kind} "
                         f"File={compress(first.gpu_files, sort=False)}")
            run = []
        if node is not None and node.gpu_files:
            run.append(node)
    return "\n".join(lines) + "\n"
