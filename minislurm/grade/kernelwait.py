"""A notebook client that waits for the kernel's messages one second at a time.

nbclient waits for a cell's reply with one asyncio poll of the kernel's socket for the whole
cell limit.  On a busy machine that poll sometimes misses the wake-up for a reply that has
already arrived, and then sits idle until the limit, when pyzmq looks once more, finds the
reply and the cell "passes": on the project's CI, 3 of 10 student notebooks each sat 120 s this
way (their cell limit), and a grading run here sat over ten minutes.  Under the grader, a stall
as long as an answer cell's limit would also interrupt a right answer.  Polling in slices of a second bounds such a stall to
a second; nothing else changes.
"""

from __future__ import annotations

import time
from queue import Empty

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type

SLICE = 1.0  # seconds


class SlicedChannel(AsyncZMQSocketChannel):
    async def get_msg(self, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = SLICE if deadline is None else max(0.0, min(SLICE, deadline - time.monotonic()))
            if await self.socket.poll(int(left * 1000)):
                return await self._recv()
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty


class SlicedKernelClient(AsyncKernelClient):
    shell_channel_class = Type(SlicedChannel)
    iopub_channel_class = Type(SlicedChannel)
    control_channel_class = Type(SlicedChannel)


class SlicedKernelManager(AsyncKernelManager):
    client_factory = Type(SlicedKernelClient)


def notebook_client(nb, **options):
    """``nbclient.NotebookClient(nb, **options)`` on :class:`SlicedKernelManager`.

    The client's ``timed_out`` is the limit (seconds) of the last cell that ran past it, or None:
    the grader resets it before a cell and reads it after, so that a cell interrupted for its
    time is told from one that failed (a slow machine must not turn into a wrong answer)."""
    from nbclient import NotebookClient

    class LimitRecordingClient(NotebookClient):
        timed_out: float | None = None

        async def _async_handle_timeout(self, timeout, cell=None):
            self.timed_out = timeout
            return await super()._async_handle_timeout(timeout, cell)

    return LimitRecordingClient(nb, kernel_manager_class=SlicedKernelManager, **options)
