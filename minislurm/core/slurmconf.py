"""Read the subset of real ``slurm.conf`` that minislurm models (writing: :mod:`slurmconf_render`).

One file describes the lab cluster for both minislurm and real Slurm, so the syntax is Slurm's:
``Key=Value`` pairs (keys case-insensitive), ``#`` comments, a trailing ``\\`` continues a line,
``NodeName=``/``PartitionName=`` lines with hostlists and ``DEFAULT`` lines.  Keys minislurm does
not model (``AuthType``, ``TaskPlugin``...) are kept in ``ClusterConfig.other`` with a warning,
never an error, so a production file loads; a line that cannot mean anything raises
:class:`ConfigError` naming file, line and problem.  ``Include`` is ignored with a warning.

Settings only minislurm understands go in comments, which real Slurm skips::

    #minislurm: BackfillPolicy=easy      # or conservative (sched/backfill), fifo (sched/builtin)

It overrides the policy that ``SchedulerType`` implies, wherever it stands in the file.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from .cluster import MAX_SCRIPT_SIZE, ClusterConfig, NodeConfig, PartitionConfig
from .gresconf import (ConfigError, apply_gres_conf, expand_or_fail, logical_lines,
                       parse_node_gres, split_pairs)
from .slurmconf_render import POLICIES, render_slurm_conf
from .timefmt import parse_time_limit

__all__ = ["ConfigError", "load", "parse_slurm_conf", "render_slurm_conf"]

NODE_STATES = ("UNKNOWN", "IDLE", "DOWN", "DRAIN", "FAIL", "FAILING", "FUTURE", "CLOUD")
PART_STATES = ("UP", "DOWN", "DRAIN", "INACTIVE")
BACKFILL_POLICIES = ("easy", "conservative", "fifo")
_MULTI = {"slurmctldhost"}  # keys Slurm allows more than once (backup controllers)


def _int(v: str, lo: int = 0) -> int:
    if not re.fullmatch(r"-?\d+", v) or int(v) < lo:
        raise ValueError(f"expected a whole number >= {lo}" if lo else "expected a whole number")
    return int(v)


def _one_of(*allowed: str):
    def check(v: str) -> str:
        for a in allowed:
            if a.lower() == v.lower():
                return a
        raise ValueError("expected " + (" or ".join(allowed) if len(allowed) == 2
                                        else "one of " + ", ".join(allowed)))
    return check


def _yesno(v: str) -> bool:
    return _one_of("YES", "NO")(v) == "YES"


def _secs(v: str) -> float:
    """A Slurm time (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]], UNLIMITED) in seconds."""
    try:
        return parse_time_limit(v) * 60
    except ValueError:
        raise ValueError("expected a Slurm time such as 30, 1:00:00, 2-0 or UNLIMITED") from None


def _words(v: str) -> list[str]:
    return [w for w in v.split(",") if w]


def _allowed(v: str) -> list[str] | None:
    """AllowAccounts/AllowGroups: a comma list, or ALL (anyone: None)."""
    words = _words(v)
    return None if not words or any(w.upper() == "ALL" for w in words) else words


ENFORCE = ("associations", "limits", "qos", "safe", "wckeys", "nojobs", "nosteps", "all")


def _enforce(v: str) -> frozenset[str]:
    """AccountingStorageEnforce: limits, safe, qos and wckeys each imply associations, as in
    Slurm; ``all`` is every one but nojobs and nosteps; ``0``/``none``: nothing enforced."""
    words = {w.lower() for w in _words(v)}
    if words <= {"0", "none", "no"}:
        return frozenset()
    unknown = sorted(words - set(ENFORCE))
    if unknown:
        raise ValueError(f"unknown item '{unknown[0]}' (expected " + ", ".join(ENFORCE) + ")")
    if "all" in words:
        words = (words | {"associations", "limits", "qos", "safe", "wckeys"}) - {"all"}
    if words & {"limits", "safe", "qos", "wckeys"}:
        words.add("associations")
    if "safe" in words:
        words.add("limits")
    return frozenset(words)


_TOP = {  # lowercased key -> (sub-record or "", attribute, converter)
    "clustername": ("", "cluster_name", str.lower),  # Slurm lower-cases it too
    "slurmdtimeout": ("", "slurmd_timeout", lambda v: float(_int(v))),
    "returntoservice": ("", "return_to_service", lambda v: int(_one_of("0", "1", "2")(v))),
    "jobrequeue": ("", "job_requeue", lambda v: _one_of("0", "1")(v) == "1"),
    "killwait": ("", "kill_wait", lambda v: float(_int(v))),
    "firstjobid": ("", "first_job_id", lambda v: _int(v, 1)),
    "inactivelimit": ("", "inactive_limit", lambda v: float(_int(v))),
    "defmempercpu": ("", "def_mem_per_cpu", _int),
    "defmempernode": ("", "def_mem_per_node", _int),
    "statesavelocation": ("", "state_save_location", str),
    "accountingstorageenforce": ("", "accounting_enforce", _enforce),
    "grestypes": ("", "gres_types", lambda v: {g.lower() for g in _words(v)}),
    "prioritytype": ("priority", "type", _one_of("priority/multifactor", "priority/basic")),
    "prioritydecayhalflife": ("priority", "decay_half_life", _secs),
    "prioritymaxage": ("priority", "max_age", _secs),
    "prioritycalcperiod": ("priority", "calc_period", _secs),
    "priorityfavorsmall": ("priority", "favor_small", _yesno),
    "priorityflags": ("priority", "flags", lambda v: {f.upper() for f in _words(v)}),
    **{f"priorityweight{w}": ("priority", f"weight_{w}", _int)
       for w in ("age", "fairshare", "jobsize", "partition", "qos", "assoc")},
}
# SchedulerParameters items: name -> (seconds per unit, type); bf_window is in minutes.
_SCHED = {"bf_interval": (1, float), "bf_window": (60, float), "bf_resolution": (1, float),
          "bf_max_job_test": (1, int), "requeue_delay": (1, float), "max_script_size": (1, int)}
MAX_SCRIPT_SIZE_LIMIT = 512 * 1024 * 1024  # slurmctld will not start with a larger max_script_size
_NODE = {"cpus": ("cpus", lambda v: _int(v, 1)), "procs": ("cpus", lambda v: _int(v, 1)),
         "realmemory": ("real_memory", lambda v: _int(v, 1)), "weight": ("weight", _int),
         "feature": ("features", _words), "features": ("features", _words),
         "state": ("state", _one_of(*NODE_STATES))}
_PART = {"default": ("default", _yesno), "maxtime": ("max_time", _secs),
         "defaulttime": ("default_time", _secs),
         "maxnodes": ("max_nodes", lambda v: math.inf if v.upper() in ("UNLIMITED", "INFINITE")
                      else _int(v, 1)),
         "state": ("state", _one_of(*PART_STATES)),
         "prioritytier": ("priority_tier", _int),
         "priorityjobfactor": ("priority_job_factor", _int),
         "allowaccounts": ("allow_accounts", _allowed), "allowgroups": ("allow_groups", _allowed)}


class _Reader:
    """One parse: DEFAULT lines so far, and checks that need the whole file first."""

    def __init__(self, path: str):
        self.path, self.cfg = path, ClusterConfig()
        # A slurm.conf without PriorityType gets Slurm's default, FIFO (minislurm's own files,
        # rendered by render_slurm_conf, always name theirs).
        self.cfg.priority.type = "priority/basic"
        self.node_defaults: dict = {}
        self.part_defaults: dict = {}
        self.seen: set[str] = set()
        self.node_names: set[str] = set()
        self.gres_uses: list[tuple[str, set[str]]] = []
        self.part_nodes: list[tuple[str, PartitionConfig, str | None]] = []
        self.policy: str | None = None

    def warn(self, where: str, text: str) -> None:
        self.cfg.warnings.append(f"{where}: {text}")

    def convert(self, where: str, key: str, value: str, conv):
        try:
            return conv(value)
        except ValueError as err:
            raise ConfigError(f"{where}: {key}={value}: {err}") from None

    def line(self, where: str, text: str, directive: bool) -> None:
        if directive:
            for key, value in split_pairs(text, where):
                if key.lower() != "backfillpolicy":
                    raise ConfigError(f"{where}: unknown #minislurm setting '{key}' "
                                      "(known: BackfillPolicy)")
                self.policy = self.convert(where, key, value, _one_of(*BACKFILL_POLICIES))
            return
        if re.match(r"include\s", text, re.IGNORECASE):
            return self.warn(where, "Include is not supported by minislurm (ignored)")
        pairs = split_pairs(text, where)
        head = pairs[0][0].lower()
        if head in ("nodename", "partitionname"):
            return (self.node_line if head == "nodename" else self.partition_line)(where, pairs)
        for key, value in pairs:
            self.top(where, key, value)

    def top(self, where: str, key: str, value: str) -> None:
        low, cfg = key.lower(), self.cfg
        if low in ("nodename", "partitionname"):
            raise ConfigError(f"{where}: {key}= must start its line")
        if low in self.seen and low not in _MULTI:
            self.warn(where, f"{key} specified more than once, latest value used")
        self.seen.add(low)
        if low in _TOP:
            obj, attr, conv = _TOP[low]
            setattr(getattr(cfg, obj) if obj else cfg, attr, self.convert(where, key, value, conv))
        elif low == "schedulertype":
            cfg.sched.scheduler_type = self.convert(where, key, value, _one_of(*POLICIES))
            cfg.sched.policy = POLICIES[cfg.sched.scheduler_type]
        elif low == "schedulerparameters":
            self.sched_params(where, value)
        else:  # kept for render_slurm_conf; repeats of a multi-valued key are joined by newlines
            name = next((k for k in cfg.other if k.lower() == low), key)
            joined = low in _MULTI and name in cfg.other
            cfg.other[name] = cfg.other[name] + "\n" + value if joined else value
            if low not in _MULTI:
                self.warn(where, f"key '{key}' is not modelled by minislurm (ignored)")

    def sched_params(self, where: str, value: str) -> None:
        kept = []
        for item in _words(value):
            name, _, val = item.partition("=")
            if name.lower() in _SCHED:
                scale, kind = _SCHED[name.lower()]
                number = self.convert(where, name, val, lambda v: _int(v, -1))
                if name.lower() == "max_script_size" and not 0 <= number <= MAX_SCRIPT_SIZE_LIMIT:
                    raise ConfigError(f"{where}: SchedulerParameters option max_script_size cannot "
                                      f"exceed 512 MB (nor be negative)")
                if name.lower() == "max_script_size" and number > MAX_SCRIPT_SIZE:
                    self.warn(where, f"max_script_size above {MAX_SCRIPT_SIZE} is not modelled by minislurm "
                              f"(its API takes no larger script; {MAX_SCRIPT_SIZE} used)")
                    number = MAX_SCRIPT_SIZE
                setattr(self.cfg.sched, name.lower(), kind(number * scale))
            else:
                kept.append(item)
                self.warn(where, f"SchedulerParameters item '{item}' is not modelled by "
                          "minislurm (ignored)")
        self.cfg.other.pop("SchedulerParameters", None)
        if kept:  # written back by render_slurm_conf
            self.cfg.other["SchedulerParameters"] = ",".join(kept)

    def node_line(self, where: str, pairs: list[tuple[str, str]]) -> None:
        attrs = dict(self.node_defaults)
        for key, value in pairs[1:]:
            low = key.lower()
            if low == "gres":
                fields, used, warns = self.convert(where, key, value, parse_node_gres)
                attrs.update(fields)
                self.gres_uses.append((where, used))
                for text in warns:
                    self.warn(where, text)
            elif low in _NODE:
                attrs[_NODE[low][0]] = self.convert(where, key, value, _NODE[low][1])
            else:
                self.warn(where, f"node key '{key}' is not modelled by minislurm (ignored)")
        if pairs[0][1].upper() == "DEFAULT":
            self.node_defaults = attrs
            return
        for name in expand_or_fail(pairs[0][1], where, pairs[0][0]):
            if name in self.node_names:
                raise ConfigError(f"{where}: node '{name}' is defined more than once")
            self.node_names.add(name)
            node = NodeConfig(name, **attrs)
            node.gres, node.features = dict(node.gres), list(node.features)
            self.cfg.nodes.append(node)

    def partition_line(self, where: str, pairs: list[tuple[str, str]]) -> None:
        attrs = dict(self.part_defaults)
        for key, value in pairs[1:]:
            low = key.lower()
            if low == "nodes":
                attrs["nodes"] = value
            elif low in _PART:
                attrs[_PART[low][0]] = self.convert(where, key, value, _PART[low][1])
            elif low == "priority":  # the pre-16.05 name: both tier and job factor
                attrs["priority_tier"] = attrs["priority_job_factor"] = self.convert(
                    where, key, value, _int)
            elif low == "oversubscribe":
                mode = self.convert(where, key, value.split(":")[0],
                                    _one_of("EXCLUSIVE", "NO", "YES", "FORCE"))
                attrs["exclusive"] = mode == "EXCLUSIVE"
                if mode in ("YES", "FORCE"):
                    self.warn(where, f"OverSubscribe={value} is not modelled by minislurm "
                              "(treated as NO)")
            else:
                self.warn(where, f"partition key '{key}' is not modelled by minislurm (ignored)")
        name = pairs[0][1]
        if name.upper() == "DEFAULT":
            self.part_defaults = attrs
            return
        if any(p.name == name for p in self.cfg.partitions):
            raise ConfigError(f"{where}: partition '{name}' is defined more than once")
        nodes = attrs.pop("nodes", None)
        part = PartitionConfig(name, **attrs)
        if part.default_time is not None and part.default_time > part.max_time:
            self.warn(where, f"partition '{name}': DefaultTime exceeds MaxTime")
        for other in self.cfg.partitions if part.default else []:
            if other.default:  # as in Slurm, the last Default=YES wins
                other.default = False
                self.warn(where, f"partition '{name}' replaces '{other.name}' as the default")
        self.cfg.partitions.append(part)
        self.part_nodes.append((where, part, nodes))

    def finish(self) -> ClusterConfig:
        """Checks that may name things defined later in the file (GresTypes, nodes)."""
        cfg = self.cfg
        for where, used in self.gres_uses:
            for name in sorted(used - cfg.gres_types):
                raise ConfigError(f"{where}: GRES '{name}' is not declared in GresTypes")
        known = [n.name for n in cfg.nodes]
        for where, part, expr in self.part_nodes:
            if expr is None:
                continue
            names = known if expr.upper() == "ALL" else expand_or_fail(expr, where, "Nodes")
            for name in names:
                if name not in self.node_names:
                    raise ConfigError(f"{where}: partition '{part.name}' names unknown node "
                                      f"'{name}'")
            part.nodes = list(names)
        if cfg.def_mem_per_cpu is not None and cfg.def_mem_per_node is not None:
            cfg.warnings.append(f"{self.path}: DefMemPerCPU and DefMemPerNode are mutually "
                                "exclusive in Slurm")
        if self.policy:
            cfg.sched.policy = self.policy
        return cfg


def parse_slurm_conf(text: str, gres_conf: str | None = None, *,
                     path: str = "slurm.conf", gres_path: str = "gres.conf") -> ClusterConfig:
    """A :class:`ClusterConfig` from slurm.conf text, and gres.conf text when given."""
    reader = _Reader(path)
    for number, line, directive in logical_lines(text):
        reader.line(f"{path} line {number}", line, directive)
    cfg = reader.finish()
    if gres_conf is not None:
        apply_gres_conf(cfg, gres_conf, gres_path)
    return cfg


def load(path: str | Path) -> ClusterConfig:
    """Read a slurm.conf file and the gres.conf beside it, when there is one."""
    path = Path(path)
    gres = path.with_name("gres.conf")
    return parse_slurm_conf(path.read_text(), gres.read_text() if gres.exists() else None,
                            path=str(path), gres_path=str(gres))
