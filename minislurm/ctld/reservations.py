"""``scontrol create|update|delete reservation``: advance reservations, saved with the state.

The rules of Slurm 22.05's slurmctld (checked on the real-Slurm twin): only operators create,
change or delete one ("Invalid user id" otherwise); its users must exist; it may not share a
node and a moment with another reservation; it may not start on nodes that running jobs would
still hold, unless ``Flags=IGNORE_JOBS``; ``NodeCnt=N`` takes free nodes of the partition
(default: the default one) in name order, at most as many as it has; one that a running job
uses cannot be deleted.  A reservation by count replaces a node that goes DOWN or DRAINED with
a free one of its partition within seconds, with ``Flags=REPLACE_DOWN`` or without it; named
nodes are never replaced, and asking for REPLACE_DOWN with them is "Invalid node name specified".
"""

from __future__ import annotations

import asyncio
import logging
import math
import pwd
from dataclasses import replace
from typing import TYPE_CHECKING

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.hostlist import HostlistError, expand
from minislurm.core.reservation import FLAGS, AdvanceReservation

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller

log = logging.getLogger("minislurm.ctld")
OVERLAP = "Requested reservation overlaps with another reservation"
IN_USE = "Requested reservation is in use"
INVALID_USER = "Invalid user id"


def to_dict(r: AdvanceReservation) -> dict:
    return {"name": r.name, "nodes": list(r.nodes), "start": r.start,
            "end": None if r.end == math.inf else r.end, "users": sorted(r.users),
            "accounts": sorted(r.accounts), "flags": sorted(r.flags), "partition": r.partition}


def from_dict(d: dict) -> AdvanceReservation:
    return AdvanceReservation(d["name"], tuple(d["nodes"]), d["start"], math.inf if d["end"] is None else d["end"],
                              frozenset(d.get("users", ())), frozenset(d.get("accounts", ())),
                              frozenset(d.get("flags", ())), d.get("partition"))


def load_reservations(ctl: "Controller") -> None:
    for d in ctl.store.reservations():
        ctl.state.reservations[d["name"]] = r = from_dict(d)
        pass_at_bounds(ctl, r)


BOUND_SLACK = 0.01  # asyncio may run a timer up to its clock's resolution early


def pass_at_bounds(ctl: "Controller", r: AdvanceReservation) -> None:
    """A pass when the reservation starts and when it ends, as the simulator runs one: who may
    run where changes then.  Each runs a moment past its bound, so that it sees it passed.  (A
    timer left from before an update only runs a pass more.)"""
    now, loop = ctl.clock(), asyncio.get_running_loop()
    for when in (r.start, r.end):
        if now < when < math.inf:
            loop.call_later(when - now + BOUND_SLACK, ctl.request_pass)


def _named_nodes(ctl: "Controller", text: str) -> tuple[str, ...]:
    try:
        nodes = tuple(expand(text)) if text.upper() != "ALL" else tuple(ctl.state.nodes.names)
    except HostlistError:
        raise SlurmError(errors.INVALID_NODE_NAME) from None
    if not nodes or any(n not in ctl.state.nodes.index for n in nodes):
        raise SlurmError(errors.INVALID_NODE_NAME)
    return nodes


def _busy(ctl: "Controller", r: AdvanceReservation) -> set[str]:
    """Nodes that running jobs hold into the reservation's window."""
    st = ctl.state
    return {st.nodes.names[n] for job in st.running.values() if job.alloc is not None
            and job.start_time + job.time_limit > r.start for n in job.alloc.nodes}


def _free(ctl: "Controller", r: AdvanceReservation, part, others: list) -> list[str]:
    """The partition's nodes, in order, that are up and neither reserved by ``others`` in
    ``r``'s window nor (without IGNORE_JOBS) busy into it."""
    st = ctl.state
    busy = set() if "IGNORE_JOBS" in r.flags else _busy(ctl, replace(r, nodes=tuple(part.nodes)))
    taken = {n for o in others if o.start < r.end and r.start < o.end for n in o.nodes}
    return [n for n in part.nodes if n not in busy | taken and st.nodes.usable[st.nodes.index[n]]]


def _by_count(ctl: "Controller", r: AdvanceReservation, count: int, others: list) -> tuple[str, ...]:
    """``NodeCnt=``: the partition's first free nodes; Slurm 22.05 asks for no more than the
    partition has."""
    st = ctl.state
    part = st.partitions.get(r.partition) if r.partition else st.default_partition()
    if part is None:
        raise SlurmError(errors.INVALID_PARTITION)
    free = _free(ctl, r, part, others)
    want = min(count, len(part.nodes))
    if len(free) < want:
        raise SlurmError(errors.NODES_BUSY)
    r.partition = part.name
    return tuple(free[:want])


def _apply(ctl: "Controller", old: AdvanceReservation, fields: dict, now: float) -> AdvanceReservation:
    """A new reservation: ``old`` with ``fields`` applied (``old`` itself is never changed, so a
    refused update leaves nothing behind).  ``fields`` passed the API's schema: numbers are
    finite epoch seconds, nodes a hostlist text."""
    r = replace(old)
    if "start" in fields:
        r.start = now if fields["start"] is None else fields["start"]
    if "duration" in fields:
        r.end = math.inf if fields["duration"] is None else r.start + fields["duration"]
    if "end" in fields:
        r.end = math.inf if fields["end"] is None else fields["end"]
    if "users" in fields:
        r.users = frozenset(u for u in fields["users"].split(",") if u)
    if "accounts" in fields:
        r.accounts = frozenset(a for a in fields["accounts"].split(",") if a)
    if "flags" in fields:
        r.flags = frozenset(f.upper() for f in fields["flags"].split(",") if f)
        unknown = r.flags - set(FLAGS)
        if unknown:
            raise SlurmError(f"Error parsing flags {','.join(sorted(unknown))}")
    if "partition" in fields:
        r.partition = fields["partition"]
    if r.end <= r.start:
        raise SlurmError(errors.INVALID_TIME_VALUE)
    if not r.users and not r.accounts:
        raise SlurmError("Reservation request lacks users or accounts")
    for user in r.users:
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise SlurmError(INVALID_USER) from None
    others = [o for o in ctl.state.reservations.values() if o.name != r.name]
    if "nodes" in fields:
        r.nodes = _named_nodes(ctl, fields["nodes"])
        r.flags |= {"SPEC_NODES"}
        r.partition = None
    elif "node_count" in fields:
        r.nodes = _by_count(ctl, r, fields["node_count"], others)
    if "REPLACE_DOWN" in r.flags and "SPEC_NODES" in r.flags:  # as 22.05 answers it
        raise SlurmError(errors.INVALID_NODE_NAME)
    if any(r.overlaps(o) for o in others):
        raise SlurmError(OVERLAP)
    if "IGNORE_JOBS" not in r.flags and ({"nodes", "node_count", "start"} & fields.keys()) and \
            _busy(ctl, r) & set(r.nodes):
        raise SlurmError(errors.NODES_BUSY)
    return r


def _unique_name(ctl: "Controller", user: str) -> str:
    """Slurm names an unnamed reservation after its creator and a number (``root_3``)."""
    n = len(ctl.state.reservations) + 1
    while f"{user}_{n}" in ctl.state.reservations:
        n += 1
    return f"{user}_{n}"


async def create(ctl: "Controller", fields: dict, user: str) -> str:
    now = ctl.clock()
    name = fields.get("name") or _unique_name(ctl, user)
    if name in ctl.state.reservations:
        raise SlurmError("Duplicate reservation name")
    if "nodes" not in fields and "node_count" not in fields:
        raise SlurmError(errors.INVALID_NODE_NAME)
    r = _apply(ctl, AdvanceReservation(name, (), now), fields, now)
    ctl.state.add_reservation(r)
    pass_at_bounds(ctl, r)
    ctl.store.put_reservation(name, to_dict(r))
    await ctl.commit()
    return name


async def update(ctl: "Controller", name: str, fields: dict) -> None:
    old = ctl.state.reservations.get(name)
    if old is None:
        raise SlurmError(errors.INVALID_RESERVATION)
    r = _apply(ctl, old, fields, ctl.clock())
    ctl.state.add_reservation(r)  # swapped in whole, only once every field was accepted
    pass_at_bounds(ctl, r)
    ctl.store.put_reservation(name, to_dict(r))
    await ctl.commit()


async def replace_lost(ctl: "Controller") -> None:
    """Every reservation by count that has not ended swaps each of its nodes that is DOWN or
    DRAINED for a free node of its partition, while there is one (slurmctld's periodic check;
    the twin did it within 5 s): a run requeued from a lost node starts again inside it."""
    now, changed = ctl.clock(), False
    usable, index = ctl.state.nodes.usable, ctl.state.nodes.index
    for r in list(ctl.state.reservations.values()):
        lost = [n for n in r.nodes if not usable[index[n]]]
        part = ctl.state.partitions.get(r.partition) if r.partition else None
        if not lost or part is None or "SPEC_NODES" in r.flags or r.end <= now:
            continue
        others = [o for o in ctl.state.reservations.values() if o.name != r.name]
        spares = [n for n in _free(ctl, r, part, others) if n not in r.nodes]
        swaps = dict(zip(lost, spares))
        if not swaps:
            continue
        fresh = replace(r, nodes=tuple(swaps.get(n, n) for n in r.nodes))
        log.info("reservation %s: %s replaced by %s", r.name, ",".join(swaps), ",".join(swaps.values()))
        ctl.state.add_reservation(fresh)
        ctl.store.put_reservation(r.name, to_dict(fresh))
        changed = True
    if changed:
        await ctl.commit()


async def delete(ctl: "Controller", name: str) -> None:
    if name not in ctl.state.reservations:
        raise SlurmError(errors.INVALID_RESERVATION)
    if any(j.reservation == name for j in ctl.state.running.values()):
        raise SlurmError(IN_USE)
    ctl.state.remove_reservation(name)
    ctl.store.put_reservation(name, None)
    await ctl.commit()
