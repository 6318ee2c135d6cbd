"""The node table: capacity and what is free on every node, as arrays the scheduler can scan fast.

This is mechanism, shared by the simulator and the controller: it records allocations and
releases; it never decides anything.  Policy lives in :mod:`minislurm.sched`.
"""

from __future__ import annotations

import numpy as np

from minislurm.core.cluster import NodeConfig
from minislurm.core.job import Allocation
from minislurm.core.states import NodeState


class NodeTable:
    def __init__(self, nodes: list[NodeConfig]):
        self.configs = list(nodes)
        self.names = [n.name for n in nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.cap_cpu = np.array([n.cpus for n in nodes], dtype=np.int64)
        self.cap_mem = np.array([n.real_memory for n in nodes], dtype=np.int64)
        self.cap_gpu = np.array([n.gpus for n in nodes], dtype=np.int64)
        self.gpu_type = [n.gpu_type for n in nodes]
        self.free_cpu = self.cap_cpu.copy()
        self.free_mem = self.cap_mem.copy()
        self.free_gpu = self.cap_gpu.copy()
        self.gpu_free = [(1 << n.gpus) - 1 for n in nodes]  # bit i set: GPU i is free
        # Node condition flags.  ``usable`` is what the scheduler reads: may it get new work?
        self.down = np.zeros(len(nodes), dtype=bool)
        self.drain = np.zeros(len(nodes), dtype=bool)
        self.no_respond = np.zeros(len(nodes), dtype=bool)
        self.usable = np.ones(len(nodes), dtype=bool)
        self.unusable = 0  # how many are not usable: while 0, no job waits for a node to come back
        self.reason: list[str | None] = [None] * len(nodes)
        self.jobs: list[set[int]] = [set() for _ in nodes]
        for i, n in enumerate(nodes):
            state = n.state.upper()
            if state.startswith("DOWN"):
                self.set_down(i, True, "Not responding" if state == "DOWN*" else None)
            elif state.startswith("DRAIN"):
                self.set_drain(i, True)

    def __len__(self) -> int:
        return len(self.names)

    # -- allocations ---------------------------------------------------------------
    def allocate(self, job_id: int, alloc: Allocation) -> None:
        for n, cpus, mem, gpus in zip(alloc.nodes, alloc.cpus, alloc.mem, alloc.gpus):
            mask = 0
            for g in gpus:
                mask |= 1 << g
            if cpus > self.free_cpu[n] or mem > self.free_mem[n] or self.gpu_free[n] & mask != mask:
                raise ValueError(f"allocation of job {job_id} over-commits node {self.names[n]}")
            self.free_cpu[n] -= cpus
            self.free_mem[n] -= mem
            self.free_gpu[n] -= len(gpus)
            self.gpu_free[n] &= ~mask
            self.jobs[n].add(job_id)

    def release(self, job_id: int, alloc: Allocation) -> None:
        for n, cpus, mem, gpus in zip(alloc.nodes, alloc.cpus, alloc.mem, alloc.gpus):
            if job_id not in self.jobs[n]:
                continue
            self.jobs[n].discard(job_id)
            self.free_cpu[n] += cpus
            self.free_mem[n] += mem
            self.free_gpu[n] += len(gpus)
            for g in gpus:
                self.gpu_free[n] |= 1 << g

    def free_gpu_indices(self, n: int) -> list[int]:
        mask = self.gpu_free[n]
        return [g for g in range(int(self.cap_gpu[n])) if mask >> g & 1]

    # -- condition -----------------------------------------------------------------
    def _refresh(self, n: int) -> None:
        usable = not (self.down[n] or self.drain[n] or self.no_respond[n])
        self.unusable += int(bool(self.usable[n])) - int(usable)
        self.usable[n] = usable

    def set_down(self, n: int, down: bool, reason: str | None = None) -> None:
        self.down[n] = down
        self.reason[n] = reason if down else (self.reason[n] if self.drain[n] else None)
        self._refresh(n)

    def set_drain(self, n: int, drain: bool, reason: str | None = None) -> None:
        self.drain[n] = drain
        if drain:
            self.reason[n] = reason
        elif not self.down[n]:
            self.reason[n] = None
        self._refresh(n)

    def set_responding(self, n: int, responding: bool) -> None:
        self.no_respond[n] = not responding
        self._refresh(n)

    def state(self, n: int) -> NodeState:
        """The base state sinfo shows (flags such as ``*`` are added by the caller)."""
        busy = bool(self.jobs[n])
        if self.down[n]:
            return NodeState.DOWN
        if self.drain[n]:
            return NodeState.DRAINING if busy else NodeState.DRAINED
        if not busy:
            return NodeState.IDLE
        # Slurm counts CPUs only: a node with every GPU taken but idle CPUs is "mix".
        return NodeState.ALLOCATED if self.free_cpu[n] == 0 else NodeState.MIXED
