"""What a job's processes use on this node: CPU time and resident memory, read from /proc.

Like Slurm's ``jobacct_gather/linux``, a step's processes (its roots and every descendant,
:func:`minislurm.slurmd.proc.members`) are sampled every few seconds.  A step's ``TotalCPU`` is
the sum, over every process seen, of its own user + system time at its last sample, and
``MaxRSS`` the largest sum of resident sets seen at one sample.  Known processes are read ten
times a second; new ones are looked for less and less often.  Simplification: Slurm takes
the final CPU time from ``wait4``; here each process's last sample counts, so up to one
tenth of a second of each process's CPU time is missed.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from minislurm.slurmd.proc import ProcessSet, members

TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# The processes already known are read every TICK seconds (a few small files: cheap); the
# search for new ones (a scan of all of /proc) runs a quarter of a second in, then at doubling
# intervals up to Slurm's default JobAcctGatherFrequency (30 s), so long steps cost little.
TICK, FIRST, LAST = 0.1, 0.25, 30.0


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

    def view(self) -> dict:
        return {"cpu": round(self.cpu, 3), "rss": self.max_rss, "ntasks": self.ntasks}


class Meter:
    """Samples one process set until :meth:`stop`; ``usage`` holds the totals so far."""

    def __init__(self, procs: ProcessSet, ntasks: int = 1):
        self.procs, self.usage = procs, Usage(ntasks=ntasks)
        self._cpu: dict[tuple[int, int], float] = {}  # every process seen: its CPU time at its last sample
        self._known: set[int] = set()
        self._task = asyncio.ensure_future(self._run())

    def take(self, search: bool = True) -> None:
        if search:
            self._known = members(self.procs.pids(), self.procs.tag)
        now = sample(self._known | self.procs.pids())
        self._cpu.update({key: cpu for key, (cpu, _) in now.items()})
        self.usage.cpu = sum(self._cpu.values())
        self.usage.max_rss = max(self.usage.max_rss, sum(rss for _, rss in now.values()))

    async def _run(self) -> None:
        interval, waited = FIRST, 0.0
        self.take(search=False)  # the roots alone: a scan of /proc per node would cost a wide
        # step's launch more than its tasks do (``srun -N256 true``); the first search is at FIRST
        while True:
            await asyncio.sleep(TICK)
            waited += TICK
            if waited >= interval:
                interval, waited = min(interval * 2, LAST), 0.0
            self.take(search=waited == 0.0)

    def stop(self) -> dict:
        self._task.cancel()
        return self.usage.view()
