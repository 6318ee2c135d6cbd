"""``sinfo -t/--states``: which nodes a state list keeps, read as sinfo 22.05 reads it.

* Words are split at ``,`` and ``&``; with any ``&`` in the list a node must match every word,
  else any one (``-t idle,drain`` is either, ``-t 'idle&drain'`` a drained idle node).  ``+``
  joins nothing: ``idle+drain`` is one unknown word, refused.
* A word is any leading part of a state's name or short name, tried in Slurm's order (``d`` is
  DOWN, ``dr`` DRAIN); ``all`` keeps every node.
* DRAIN is the drain flag whatever the node does (``drain`` keeps draining and drained nodes),
  DRAINED and DRAINING one of the two; ALLOC keeps any node with a CPU allocated (mixed ones and
  draining ones too); IDLE, DOWN, MIXED, UNKNOWN compare the base state, so a drained idle node
  is IDLE; RESV, MAINT, COMP, FAIL, NO_RESPOND compare a flag.

A word that names no state gets sinfo's two errors (``Bad state string``, then the valid
states) and exit 1.
"""

from __future__ import annotations

from minislurm.cli.fmt.scontrol_nodes import node_state_string

# (name, short name, what it tests) in the order sinfo tries them: the base states first.
_WORDS = [("UNKNOWN", "UNK", "base"), ("DOWN", "DOWN", "base"), ("IDLE", "IDLE", "base"),
          ("ALLOCATED", "ALLOC", "alloc"), ("?", "?", "base"), ("MIXED", "MIX", "base"),
          ("FUTURE", "FUTR", "base"), ("PLANNED", "PLND", "flag"), ("DRAIN", "DRAIN", "drain"),
          ("DRAINED", "DRAINED", "drained"), ("RESERVED", "RESV", "flag"), ("PERFCTRS", "NPC", "flag"),
          ("DRAINING", "DRNG", "draining"), ("COMPLETING", "COMP", "flag"), ("NO_RESPOND", "NO_RESPOND", "flag"),
          ("POWERING_DOWN", "POWRING_DN", "flag"), ("POWERED_DOWN", "POWERED_DN", "flag"),
          ("POWER_DOWN", "POW_DN", "flag"), ("POWERING_UP", "POWERING_UP", "flag"), ("FAIL", "FAIL", "flag"),
          ("MAINT", "MAINT", "flag"), ("REBOOT_REQUESTED", "BOOT", "flag"), ("REBOOT_ISSUED", "BOOT^", "flag"),
          ("CLOUD", "CLOUD", "flag")]

# sinfo's list of valid states, as node_state_string() names each (lower case).
VALID = ("unknown,down,idle,allocated,?,mixed,future,drain,drained,draining,no_respond,reserved,perfctrs,"
         "cloud,completing,powering_down,powered_down,power_down,powering_up,fail,maint,reboot,reboot^,unknown")

_FLAG_OF = {"MAINTENANCE": "MAINT", "RESERVED": "RESERVED", "NOT_RESPONDING": "NO_RESPOND"}


class BadState(ValueError):
    """A word of the list names no node state."""


def _word(text: str) -> tuple[str, str]:
    for name, short, test in _WORDS:
        if name.lower().startswith(text.lower()) or short.lower().startswith(text.lower()):
            return name, test
    raise BadState(text)


def parse(text: str):
    """A predicate over NodeView dicts; :class:`BadState` for an unknown word."""
    if text.lower() == "all":
        return lambda node: True
    words = [_word(w) for w in text.replace("&", ",").split(",") if w]
    every = "&" in text
    return lambda node: (all if every else any)(_matches(node, name, test) for name, test in words)


def _base_and_flags(node: dict) -> tuple[str, set[str]]:
    """The node's state as slurmctld holds it: a base and flags (a drained node keeps ALLOCATED
    while it runs jobs; sinfo turns only undrained nodes MIXED)."""
    base, *flags = node_state_string(node).split("+")
    flags = {_FLAG_OF.get(f, f) for f in flags}
    if "DRAIN" in flags and base == "MIXED":
        base = "ALLOCATED"
    return base, flags


def _matches(node: dict, name: str, test: str) -> bool:
    base, flags = _base_and_flags(node)
    busy = base in ("ALLOCATED", "MIXED")
    if test == "drain":
        return "DRAIN" in flags
    if test == "draining":
        return "DRAIN" in flags and busy
    if test == "drained":
        return "DRAIN" in flags and not busy
    if test == "alloc":
        return node.get("alloc_cpus", 0) > 0
    if test == "flag":
        return name in flags
    return base == name
