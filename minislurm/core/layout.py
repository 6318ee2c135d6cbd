"""Block task layout: how many tasks go on each node, and Slurm's compressed count lists.

``-n 10 -N 3`` puts 4, 3 and 3 tasks on the three nodes (consecutive tasks share a node), and
Slurm writes such lists compressed: ``SLURM_TASKS_PER_NODE=4,3(x2)``.
"""

from __future__ import annotations


def block(ntasks: int, nnodes: int, max_per_node: int | None = None) -> list[int]:
    """Tasks per node, as even as possible, fuller nodes first."""
    if nnodes <= 0:
        return []
    base, extra = divmod(ntasks, nnodes)
    counts = [base + (1 if i < extra else 0) for i in range(nnodes)]
    if max_per_node is not None and counts and counts[0] > max_per_node:
        raise ValueError(f"{ntasks} tasks do not fit on {nnodes} nodes of {max_per_node} tasks")
    return counts


def compress_counts(counts: list[int]) -> str:
    """``[4, 4, 2]`` -> ``4(x2),2``."""
    out: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[i]:
            j += 1
        run = j - i + 1
        out.append(f"{counts[i]}(x{run})" if run > 1 else str(counts[i]))
        i = j + 1
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
