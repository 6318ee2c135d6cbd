"""select/cons_tres: consumable trackable resources (CPUs, memory, GPUs) counted per node.

A job asks for ``num_nodes`` nodes that can each give its :class:`~minislurm.core.job.Shape`.
Nodes are shared between jobs unless the job is ``--exclusive``.  The ``-w`` nodes are taken
first (all of them, or nothing); the rest are the lowest-numbered nodes that fit (Slurm orders
by node Weight, then by position, when weights are equal), and on each node the lowest free
GPU indices.  A ``-n`` job's tasks then fill the chosen nodes in order, which sets each node's
CPUs (``-N2 -n4`` on idle 8-CPU nodes: 3 and 1).
"""

from __future__ import annotations

import numpy as np

from minislurm.core.job import Allocation, Job
from minislurm.core.layout import fill
from minislurm.core.nodes import NodeTable

Request = tuple[np.ndarray | int, np.ndarray | int, np.ndarray | int]


def request(job: Job, nodes: NodeTable) -> Request:
    """Per-node CPUs, memory and GPUs the job needs; arrays where the answer depends on the node."""
    shape = job.shape
    mem = nodes.cap_mem if shape.mem == -1 else shape.mem
    if job.exclusive:
        return nodes.cap_cpu, mem, nodes.cap_gpu
    return shape.cpus, mem, shape.gpus


def request_key(job: Job) -> tuple:
    """Jobs with equal keys make identical per-node requests (used to share work in a pass)."""
    s = job.shape
    return (s.cpus, s.mem, s.gpus, s.gpu_type, job.exclusive)


def type_mask(job: Job, nodes: NodeTable) -> np.ndarray | None:
    """Nodes whose GPU type matches ``--gres=gpu:TYPE:N``; None when any type will do."""
    if not job.shape.gpu_type or not job.shape.gpus:
        return None
    return np.array([t == job.shape.gpu_type for t in nodes.gpu_type], dtype=bool)


def fits_capacity(job: Job, nodes: NodeTable) -> np.ndarray:
    """Nodes that could hold the job when empty, whatever their state: "can it *ever* run?"."""
    cpu, mem, gpu = request(job, nodes)
    ok = (nodes.cap_cpu >= cpu) & (nodes.cap_mem >= mem) & (nodes.cap_gpu >= gpu)
    tm = type_mask(job, nodes)
    return ok if tm is None else ok & tm


class FreeResources:
    """A private copy of what is free now, which one scheduling pass can spend as it decides."""

    def __init__(self, nodes: NodeTable):
        self.nodes = nodes
        self.cpu = nodes.free_cpu.copy()
        self.mem = nodes.free_mem.copy()
        self.gpu = nodes.free_gpu.copy()
        self.gpu_mask = list(nodes.gpu_free)

    def fits(self, req: Request) -> np.ndarray:
        cpu, mem, gpu = req
        return (self.cpu >= cpu) & (self.mem >= mem) & (self.gpu >= gpu)

    def open_now(self, usable: np.ndarray, floor: tuple[int, int, int]) -> np.ndarray:
        """The usable nodes with at least ``floor`` (CPUs, memory, GPUs) free, and a CPU: the
        only nodes where a job asking at least ``floor`` of a node could start now."""
        cpu, mem, gpu = floor
        return usable & (self.cpu >= max(cpu, 1)) & (self.mem >= mem) & (self.gpu >= gpu)

    def place(self, job: Job, req: Request, candidates: np.ndarray,
              required: np.ndarray | None = None) -> Allocation | None:
        """Choose ``job.num_nodes`` of the candidate nodes and concrete GPUs on each, or None.

        ``required`` (node indices, from ``-w``) must all be candidates; they count towards
        the node count and the others fill up the rest.
        """
        if required is not None and len(required):
            if not candidates[required].all():
                return None
            rest = candidates.copy()
            rest[required] = False
            extra = max(0, job.num_nodes - len(required))
            others = np.flatnonzero(rest)[:extra]
            if len(others) < extra:
                return None
            chosen = np.sort(np.concatenate([required, others]))
        else:
            chosen = candidates.nonzero()[0][: job.num_nodes]
            if len(chosen) < job.num_nodes:
                return None
        cpu, mem, gpu = req
        cpus, mems, gpus = [], [], []
        for n in chosen:
            want = int(gpu[n]) if isinstance(gpu, np.ndarray) else gpu
            mask, picked, g = self.gpu_mask[n], [], 0
            while len(picked) < want:
                if mask >> g & 1:
                    picked.append(g)
                g += 1
            cpus.append(int(cpu[n]) if isinstance(cpu, np.ndarray) else cpu)
            mems.append(int(mem[n]) if isinstance(mem, np.ndarray) else mem)
            gpus.append(tuple(picked))
        if job.shape.tasks and not job.exclusive:
            cpus = [t * job.shape.cpus_per_task for t in self._filled(job, chosen)]
            if job.shape.mem_per_cpu:
                mems = [c * job.shape.mem_per_cpu for c in cpus]
        return Allocation(tuple(int(n) for n in chosen), tuple(cpus), tuple(mems), tuple(gpus))

    def _filled(self, job: Job, chosen: np.ndarray) -> list[int]:
        """Tasks on each chosen node when the job's tasks fill them in order (one
        each, then the first node as full as its free CPUs and memory allow, then the next),
        as 22.05's block distribution does.  Every chosen node fits the even share, so the
        tasks always fit."""
        s = job.shape
        cap = s.max_tasks_per_node or s.tasks
        room = []
        for n in chosen:
            r = min(cap, int(self.cpu[n]) // s.cpus_per_task)
            if s.mem_per_cpu:
                r = min(r, int(self.mem[n]) // (s.mem_per_cpu * s.cpus_per_task))
            room.append(r)
        return fill(s.tasks, room)

    def take(self, alloc: Allocation) -> None:
        for n, c, m, g in zip(alloc.nodes, alloc.cpus, alloc.mem, alloc.gpus):
            self.cpu[n] -= c
            self.mem[n] -= m
            self.gpu[n] -= len(g)
            for i in g:
                self.gpu_mask[n] &= ~(1 << i)
