"""``scontrol create|update|delete reservation``: advance reservations, saved with the state."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from minislurm.core import errors
from minislurm.core.errors import SlurmError
from minislurm.core.hostlist import HostlistError, expand
from minislurm.core.reservation import AdvanceReservation

if TYPE_CHECKING:
    from minislurm.ctld.controller import Controller


def to_dict(r: AdvanceReservation) -> dict:
    return {"name": r.name, "nodes": list(r.nodes), "start": r.start,
            "end": None if r.end == math.inf else r.end, "users": sorted(r.users),
            "accounts": sorted(r.accounts), "flags": sorted(r.flags)}


def from_dict(d: dict) -> AdvanceReservation:
    return AdvanceReservation(d["name"], tuple(d["nodes"]), d["start"], math.inf if d["end"] is None else d["end"],
                              frozenset(d.get("users", ())), frozenset(d.get("accounts", ())),
                              frozenset(d.get("flags", ())))


def load_reservations(ctl: "Controller") -> None:
    for d in ctl.store.reservations():
        ctl.state.reservations[d["name"]] = from_dict(d)


def _apply(ctl: "Controller", old: AdvanceReservation, fields: dict, now: float) -> AdvanceReservation:
    """A new reservation: ``old`` with ``fields`` applied (``old`` itself is never changed, so a
    refused update leaves nothing behind).  ``fields`` passed the API's schema: numbers are
    finite epoch seconds, nodes a hostlist text."""
    r = replace(old)
    if "nodes" in fields:
        try:
            nodes = tuple(expand(fields["nodes"])) if fields["nodes"].upper() != "ALL" else tuple(ctl.state.nodes.names)
        except HostlistError:
            raise SlurmError(errors.INVALID_NODE_NAME) from None
        unknown = [n for n in nodes if n not in ctl.state.nodes.index]
        if unknown or not nodes:
            raise SlurmError(errors.INVALID_NODE_NAME)
        r.nodes = nodes
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
    if r.end <= r.start:
        raise SlurmError(errors.INVALID_TIME_VALUE)
    if not r.users and not r.accounts:
        raise SlurmError("Reservation request lacks users or accounts")
    return r


async def create(ctl: "Controller", fields: dict) -> str:
    now = ctl.clock()
    name = fields.get("name") or f"resv{len(ctl.state.reservations) + 1}"
    if name in ctl.state.reservations:
        raise SlurmError("Duplicate reservation name")
    if "nodes" not in fields:
        raise SlurmError(errors.INVALID_NODE_NAME)
    r = _apply(ctl, AdvanceReservation(name, (), now), fields, now)
    ctl.state.add_reservation(r)
    ctl.store.put_reservation(name, to_dict(r))
    await ctl.commit()
    return name


async def update(ctl: "Controller", name: str, fields: dict) -> None:
    old = ctl.state.reservations.get(name)
    if old is None:
        raise SlurmError(errors.INVALID_RESERVATION)
    r = _apply(ctl, old, fields, ctl.clock())
    ctl.state.add_reservation(r)  # swapped in whole, only once every field was accepted
    ctl.store.put_reservation(name, to_dict(r))
    await ctl.commit()


async def delete(ctl: "Controller", name: str) -> None:
    if name not in ctl.state.reservations:
        raise SlurmError(errors.INVALID_RESERVATION)
    ctl.state.remove_reservation(name)
    ctl.store.put_reservation(name, None)
    await ctl.commit()
