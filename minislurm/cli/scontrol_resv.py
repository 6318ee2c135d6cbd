"""scontrol's reservation words: the fields of ``create|update reservation`` and the way each
command reports a refusal (as scontrol 22.05 does, checked on the real-Slurm twin)."""

from __future__ import annotations

import sys
import time

from minislurm.client import ClientError
from minislurm.core.reservation import FLAGS
from minislurm.core.timefmt import parse_begin, parse_time_limit


class NotCreated(ValueError):
    """A reservation request scontrol itself refuses ("...  No reservation created.")."""


RESV_FLAGS = set(FLAGS)  # the ones minislurm models (book ch. 9)


def reservation_fields(pairs: dict[str, str], create: bool = False) -> dict:
    now = time.time()
    fields: dict = {}
    for key, value in pairs.items():
        k = key.lower()
        if k in ("reservationname", "reservation"):
            fields["name"] = value
        elif k == "nodes":
            fields["nodes"] = value
        elif k in ("nodecnt", "nodecount"):
            if not value.isdigit() or int(value) < 1:
                raise NotCreated(f"Invalid node count {key}={value}.")
            fields["node_count"] = int(value)
        elif k in ("partitionname", "partition"):
            fields["partition"] = value
        elif k == "starttime":
            fields["start"] = None if value.lower() == "now" else parse_begin(value, now)
        elif k == "endtime":
            fields["end"] = parse_begin(value, now)
        elif k == "duration":
            try:
                minutes = parse_time_limit(value)
            except ValueError:
                raise NotCreated(f"Invalid duration {key}={value}.") from None
            fields["duration"] = None if minutes == float("inf") else minutes * 60
        elif k in ("users", "user"):
            fields["users"] = value
        elif k in ("accounts", "account"):
            fields["accounts"] = value
        elif k == "flags":
            if {f.upper() for f in value.split(",") if f} - RESV_FLAGS:
                raise NotCreated(f"Error parsing flags {value}.")
            fields["flags"] = value
        else:
            raise ValueError(f"Invalid input: {key}")
    if create and not (fields.get("users") or fields.get("accounts")):
        raise NotCreated("Either Users/Groups and/or Accounts must be specified.")
    return fields


def report(cmd: str, exc: ClientError, typed: str = "") -> None:
    """Each reservation command words its failure its own way (as scontrol 22.05 does)."""
    if cmd == "create":
        print(f"Error creating the reservation: {exc}", file=sys.stderr, flush=True)
        if str(exc) == "Requested nodes are busy":
            print("Note, unless nodes are directly requested a reservation must exist in a single partition.\n"
                  "If no partition is requested the default partition is assumed.")
    elif cmd == "update":
        print(f"Error updating the reservation: {exc}\nslurm_update error: {exc}", file=sys.stderr)
    else:
        print(f"delete_reservation {typed}: {exc}", file=sys.stderr)  # the first word, as typed
