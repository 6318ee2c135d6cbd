"""When a daemon (controller or node agent) stops: on SIGTERM or SIGINT, as slurmctld and slurmd
do, or, with ``--exit-with-parent``, when the process that started it ends.  A cluster started
from Python (a notebook's kernel, a test) then goes with it, even when that process is killed
before it can stop the cluster; ``minislurm cluster up`` leaves the flag off, so its cluster
outlives the command."""

from __future__ import annotations

import asyncio
import os
import signal


async def until_stopped(exit_with_parent: bool = False, every: float = 1.0) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    parent = os.getppid()
    while True:
        try:
            await asyncio.wait_for(stop.wait(), every if exit_with_parent else None)
            return
        except asyncio.TimeoutError:
            if os.getppid() != parent:  # orphaned: the parent has gone
                return
