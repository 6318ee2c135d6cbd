"""A daemon's life: when it stops, the tasks it owns, the work it does periodically.

When a daemon (controller or node agent) stops: on SIGTERM or SIGINT, as slurmctld and slurmd
do, or, with ``--exit-with-parent``, when the process that started it ends.  A cluster started
from Python (a notebook's kernel, a test) then goes with it, even when that process is killed
before it can stop the cluster; ``minislurm cluster up`` leaves the flag off, so its cluster
outlives the command."""

from __future__ import annotations

import asyncio
import logging
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


class Background:
    """The tasks a daemon starts and does not wait for: kept until they finish (the event loop
    holds only weak references to tasks, so an unowned one can vanish mid-way) and a failure
    logged with its traceback, never lost in silence."""

    def __init__(self, log: logging.Logger):
        self.log = log
        self._tasks: set[asyncio.Task] = set()

    def spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.log.error("background task %s failed", task.get_coro().__qualname__, exc_info=task.exception())

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()


async def every(seconds: float, work, log: logging.Logger, *, first_after: bool = False,
                early: asyncio.Event | None = None, soonest: float = 0.0) -> None:
    """Call ``work`` (a function or a coroutine function) every ``seconds``, for good: an
    exception is logged and the next round comes as usual, so one bad round never stops a
    daemon's periodic duty (a backfill cycle, a node ping).  Setting ``early`` brings the next
    round forward, though never sooner than ``soonest`` after the last one (so that setting it
    again and again cannot keep the loop busy); the rounds after it keep their period from there."""
    async def pause() -> None:
        if early is None:
            await asyncio.sleep(seconds)
            return
        clock = asyncio.get_running_loop().time
        last = clock()
        try:
            await asyncio.wait_for(early.wait(), seconds)
            await asyncio.sleep(soonest - (clock() - last))
        except asyncio.TimeoutError:
            pass
        early.clear()

    if first_after:
        await pause()
    while True:
        try:
            result = work()
            if asyncio.iscoroutine(result):
                await result
        except Exception:  # noqa: BLE001 - a periodic loop outlives any one round
            log.exception("periodic %s failed; it runs again in %g s", getattr(work, "__qualname__", work), seconds)
        await pause()
