"""What a job's processes use on this node: CPU time and resident memory, read from /proc.

Like Slurm's ``jobacct_gather/linux``, a step's processes (its roots and every descendant,
:func:`minislurm.slurmd.proc.members`) are sampled every few seconds.  A step's ``TotalCPU`` is
the sum, over every process seen, of its own user + system time at its last sample, and
``MaxRSS`` the largest sum of resident sets seen at one sample.  Known processes are read ten
times a second; new ones are looked for less and less often.  The meters of one agent process
(a node each, for virtual nodes) tick together and share one scan of /proc per tick, so a
step over the hundreds of nodes of one process costs it a scan a tick, not one per node.
Simplification: Slurm takes
the final CPU time from ``wait4``; here each process's last sample counts, so up to one
tenth of a second of each process's CPU time is missed.

The same figures are kept per task (``jobstats`` shows them): a process counts for the task
whose session or process tree it is in; one found only by the job's tag (it left both) counts
for the node, and for its task only when the node runs one.  The step's GPUs on this node are
sampled once a second through NVML when they are real (:mod:`minislurm.slurmd.nvml`).
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from minislurm.slurmd.nvml import GpuProbe
from minislurm.slurmd.proc import ProcessSet, families, recent_scan

TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# The processes already known are read every TICK seconds (a few small files: cheap); the
# search for new ones (a scan of all of /proc) runs a quarter of a second in, then at doubling
# intervals up to Slurm's default JobAcctGatherFrequency (30 s), so long steps cost little.
TICK, FIRST, LAST = 0.1, 0.25, 30.0
GPU_EVERY = 10  # ticks between GPU samples: NVML's utilisation is itself a mean over about a second


def sample(pids: set[int]) -> dict[tuple[int, int], tuple[float, int]]:
    """(pid, start time) -> (own CPU seconds, resident KiB) of these processes now."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # after the ")" comes field 3 of stat(5) (the state), so field n is fields[n - 3]
        f = lambda n: int(fields[n - 3])  # noqa: E731
        out[(pid, f(22))] = ((f(14) + f(15)) / TICKS, f(24) * PAGE_KB)
    return out


@dataclass
class Usage:
    cpu: float = 0.0  # seconds
    max_rss: int = 0  # KiB
    ntasks: int = 0
    tasks: dict[int, list] = field(default_factory=dict)  # task id -> [CPU seconds, peak KiB]

    def view(self) -> dict:
        return {"cpu": round(self.cpu, 3), "rss": self.max_rss, "ntasks": self.ntasks,
                "tasks": {str(t): {"cpu": round(cpu, 3), "rss": rss} for t, (cpu, rss) in self.tasks.items()}}


class Meter:
    """Samples one process set until :meth:`stop`; ``usage`` holds the totals so far.  The
    set's roots are the tasks ``tasks`` (their ids, in the order they start); ``gpus`` the
    GPU indices the step holds on this node of ``node_gpus``."""

    def __init__(self, procs: ProcessSet, tasks: Sequence[int] = (0,), gpus: Sequence[int] = (),
                 node_gpus: int = 0):
        self.procs, self.task_ids = procs, tuple(tasks)
        self.usage = Usage(ntasks=len(self.task_ids), tasks={t: [0.0, 0] for t in self.task_ids})
        self.gpus = GpuProbe(tuple(gpus), node_gpus)
        # every process seen: (its task, or None) and its CPU time at its last sample
        self._cpu: dict[tuple[int, int], tuple[int | None, float]] = {}
        self._owner: dict[int, int | None] = {}  # pid -> its root's pid
        # The roots alone until FIRST: a scan of /proc would cost a wide step's launch more
        # than its tasks do (``srun -N256 true``).
        self._interval, self._waited, self._ticks = FIRST, 0.0, 0
        self._clock = _Clock.of_this_loop()
        self._clock.meters[self] = None
        self._clock.start()

    def _task_of(self, root: int | None, roots: dict[int, int]) -> int | None:
        if root is None:  # left its task's session and tree: found by the job's tag
            return self.task_ids[0] if len(self.task_ids) == 1 else None
        return roots.get(root)

    def take(self, search: bool = True) -> None:
        roots = {p.pid: t for p, t in zip(self.procs.procs, self.task_ids)}
        if search:
            self._owner = families(set(roots), self.procs.tag, recent_scan(TICK))
        owner = {**self._owner, **{pid: pid for pid in roots}}
        now = sample(set(owner))
        rss_now: dict[int | None, int] = {}
        for (pid, started), (cpu, rss) in now.items():
            task = self._task_of(owner[pid], roots)
            self._cpu[(pid, started)] = (task, cpu)
            rss_now[task] = rss_now.get(task, 0) + rss
        cpu_by_task: dict[int | None, float] = {}
        for task, cpu in self._cpu.values():
            cpu_by_task[task] = cpu_by_task.get(task, 0.0) + cpu
        u = self.usage
        u.cpu = sum(cpu_by_task.values())
        u.max_rss = max(u.max_rss, sum(rss_now.values()))
        for task, use in u.tasks.items():
            use[0] = cpu_by_task.get(task, 0.0)
            use[1] = max(use[1], rss_now.get(task, 0))

    def tick(self) -> None:
        """One TICK has passed: the known processes are read, and /proc searched when due."""
        self._waited, self._ticks = self._waited + TICK, self._ticks + 1
        if self._waited >= self._interval:
            self._interval, self._waited = min(self._interval * 2, LAST), 0.0
        self.take(search=self._waited == 0.0)
        if self._ticks % GPU_EVERY == 0:
            self.gpus.take()

    def view(self) -> dict:
        """The figures so far: CPU and peak memory, per task too, and the GPUs'."""
        return {**self.usage.view(), **self.gpus.view()}

    def stop(self) -> dict:
        self._clock.meters.pop(self, None)
        return self.view()


class _Clock:
    """The one timer of every meter of an event loop: a wake-up a tick for all of them."""

    _of_loop: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self.meters: dict[Meter, None] = {}  # in the order they started
        self._task: asyncio.Task | None = None

    @classmethod
    def of_this_loop(cls) -> "_Clock":
        loop = asyncio.get_running_loop()
        clock = cls._of_loop.get(loop)
        if clock is None:
            clock = cls._of_loop[loop] = cls()
        return clock

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while self.meters:
            await asyncio.sleep(TICK)
            for meter in list(self.meters):
                if meter in self.meters:  # not stopped by an earlier one's tick
                    meter.tick()
