"""How a local cluster spreads its nodes over agent processes, and fails one virtual node.

With ``nodes_per_agent`` K above 1, each agent process hosts K nodes
(:mod:`minislurm.slurmd.host`): 256 nodes are 8 processes, not 256 (a node agent process
costs about 38 MB).  One virtual node fails while its siblings run on: the cluster writes the
faults file and sends the hosting process SIGHUP.
"""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path

from minislurm.core.hostlist import compress
from minislurm.slurmd.host import CRASHED, CUT, read_faults

AGENTS = 8  # agent processes a big cluster gets by default: about one per core of a laptop
# What memory a local cluster takes (bench/scale.py: 81 MB controller, 314 MB for 8 processes of 32
# nodes), with room to spare, to refuse a cluster that would not fit.
CONTROLLER_MB, PROCESS_MB, NODE_MB = 80, 40, 1.0


def default_per_agent(nodes: int) -> int:
    """One process per node up to AGENTS nodes (as before), then AGENTS processes."""
    return max(1, math.ceil(nodes / AGENTS))


def check_per_agent(per_agent: int, nodes: int) -> str | None:
    if per_agent < 1 or per_agent > nodes:
        return f"--nodes-per-agent must be between 1 and the node count ({nodes}), not {per_agent}"
    return None


def groups(names: list[str], per_agent: int) -> dict[str, list[str]]:
    """Agent process name (``slurmd-gpu01``, or ``slurmd-gpu[001-032]``) -> the nodes it hosts."""
    chunks = [names[i:i + per_agent] for i in range(0, len(names), per_agent)]
    return {f"slurmd-{chunk[0] if len(chunk) == 1 else compress(chunk, sort=False)}": chunk for chunk in chunks}


def memory_needed_mb(nodes: int, per_agent: int) -> float:
    return CONTROLLER_MB + math.ceil(nodes / per_agent) * PROCESS_MB + nodes * NODE_MB


def memory_available_mb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return None


def check_memory(nodes: int, per_agent: int) -> str | None:
    """Why the cluster would not fit in this machine's free memory, if it would not."""
    need, have = memory_needed_mb(nodes, per_agent), memory_available_mb()
    if have is not None and need > have:
        return (f"a cluster of {nodes} nodes in {math.ceil(nodes / per_agent)} agent processes needs about "
                f"{need:,.0f} MB and this machine has {have:,.0f} MB available: use fewer nodes, or more "
                f"--nodes-per-agent")
    return None


def set_fault(faults: Path, name: str, fault: str | None) -> None:
    """Record ``name``'s fault (crashed, cut, or None: none) in the faults file."""
    current = read_faults(faults)
    current.pop(name, None)
    if fault is not None:
        assert fault in (CRASHED, CUT)
        current[name] = fault
    tmp = faults.with_suffix(".tmp")
    tmp.write_text("".join(f"{n} {f}\n" for n, f in current.items()))
    os.replace(tmp, faults)


def tell(pid: int) -> None:
    """Ask an agent process to read the faults file again."""
    os.kill(pid, signal.SIGHUP)
