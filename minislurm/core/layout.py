"""Task layout: how many tasks go on each node, which GPUs a bound task gets, a launch's fan-out,
and Slurm's compressed count lists (a step's place inside its job: :mod:`minislurm.core.stepfit`).

Slurm 22.05 lays tasks out in block order by *filling* nodes, not by sharing them out evenly:
every node gets one task, then the first node takes as many more as it has room for, then the
next (``-N2 -n4`` on two idle 8-CPU nodes: 3 and 1, checked on the twin).  Consecutive tasks
share a node, and Slurm writes such lists compressed: ``SLURM_TASKS_PER_NODE=3,1``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence


def block(ntasks: int, nnodes: int, max_per_node: int | None = None) -> list[int]:
    """Tasks per node, as even as possible, fuller nodes first."""
    if nnodes <= 0:
        return []
    base, extra = divmod(ntasks, nnodes)
    counts = [base + (1 if i < extra else 0) for i in range(nnodes)]
    if max_per_node is not None and counts and counts[0] > max_per_node:
        raise ValueError(f"{ntasks} tasks do not fit on {nnodes} nodes of {max_per_node} tasks")
    return counts


def fill(ntasks: int, room: list[int], *, overcommit: bool = False) -> list[int]:
    """Tasks per node: one on each node, then each node in turn up to its ``room`` (tasks it
    can hold).  Tasks left over go round the nodes one at a time with ``overcommit``; without
    it they raise ValueError, as they do when a node has no room at all."""
    if not room:
        return []
    if ntasks < len(room) or (not overcommit and (min(room) < 1 or sum(room) < ntasks)):
        raise ValueError(f"{ntasks} tasks do not fit on nodes with room for {room}")
    counts = [1] * len(room)
    left = ntasks - len(room)
    for i, r in enumerate(room):
        more = min(left, max(0, r - 1))
        counts[i] += more
        left -= more
    i = 0
    while left > 0:
        counts[i % len(counts)] += 1
        left -= 1
        i += 1
    return counts


def node_tasks(ntasks: int, cpus: list[int], cpus_per_task: int = 1, cap: int | None = None, *,
               overcommit: bool = False) -> list[int]:
    """Tasks per node for ``ntasks`` tasks of ``cpus_per_task`` CPUs on nodes holding ``cpus``
    CPUs, at most ``cap`` a node: :func:`fill` over the room the CPUs give.  Fewer tasks than
    nodes leave the last nodes empty.  Raises ValueError when they do not fit."""
    if ntasks < len(cpus):
        return block(ntasks, len(cpus))
    room = [c // max(1, cpus_per_task) for c in cpus]
    if cap:
        room = [min(r, cap) for r in room]
    return fill(ntasks, room, overcommit=overcommit)


def compress_counts(counts: list[int]) -> str:
    """``[4, 4, 2]`` -> ``4(x2),2``."""
    out: list[str] = []
    for value, same in itertools.groupby(counts):
        run = len(list(same))
        out.append(f"{value}(x{run})" if run > 1 else str(value))
    return ",".join(out)


def task_ids(counts: list[int]) -> list[list[int]]:
    """Global task ids per node for a block layout: ``[2, 2]`` -> ``[[0, 1], [2, 3]]``."""
    out, nxt = [], 0
    for c in counts:
        out.append(list(range(nxt, nxt + c)))
        nxt += c
    return out


def tree_spans(nodes: list[str], width: int) -> list[list[str]]:
    """A step launch's fan-out (Slurm's TreeWidth): at most ``width`` runs of consecutive nodes,
    each handed to its first node, which starts its own tasks and passes the rest on the same
    way.  ``["a", "b", "c", "d", "e"], 2`` -> ``[["a", "b", "c"], ["d", "e"]]``."""
    width = max(1, width)
    span = -(-len(nodes) // width)
    return [nodes[i:i + span] for i in range(0, len(nodes), span)] if nodes else []


def span_requests(body: dict) -> Callable[[list[str]], bytes]:
    """The launch request (JSON) for each span of :func:`tree_spans`: ``body`` with ``tree`` set
    to the span's nodes.  The rest is encoded once for all spans: it carries the step's
    credential, hundreds of kilobytes for a step on thousands of nodes."""
    rest = json.dumps({k: v for k, v in body.items() if k != "tree"}).encode()
    tail = b", " + rest[1:] if len(rest) > 2 else b"}"
    return lambda nodes: b'{"tree": ' + json.dumps(nodes).encode() + tail


def task_gpus(node_gpus: Sequence[int], local_id: int, per_task: int | None) -> list[int] | None:
    """The GPUs task ``local_id`` of a node binds with ``--gpus-per-task`` (its own slice of the
    step's GPUs there, in order); None without it: every task sees all of the step's GPUs."""
    if not per_task:
        return None
    return list(node_gpus[local_id * per_task:(local_id + 1) * per_task])
