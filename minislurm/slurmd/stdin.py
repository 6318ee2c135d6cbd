"""A step's standard input on one node: srun's stdin reaches the tasks through here.

As slurmstepd does, each task that takes input (all of them by default, one with
``--input=<task>``, none with ``--input=none``) gets a pipe as its stdin; with ``--pty``, task 0
gets a pseudo-terminal instead, as its stdin, stdout, stderr and controlling terminal.  srun
sends what it reads to ``POST /steps/input`` (:func:`take_input`), with the step's credential,
one chunk per request and then end of file.
"""

from __future__ import annotations

import asyncio
import base64
import fcntl
import grp
import os
import struct
import termios
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minislurm.slurmd.spawn import Identity, Stdio, spawn

if TYPE_CHECKING:
    from minislurm.slurmd.agent import NodeAgent


@dataclass
class StepInput:
    """Where srun's input goes on this node: a writer per task that takes it."""
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # chunks in the order they came

    async def feed(self, data: bytes, eof: bool) -> bool:
        """Write ``data`` to every task (waiting while one does not read yet: srun's flow
        control); whether any task still takes input."""
        async with self.lock:
            for w in list(self.writers):
                try:
                    if data:
                        w.write(data)
                        await w.drain()
                    if eof:
                        w.close()
                except (ConnectionError, OSError):  # the task closed its stdin or has ended
                    w.transport.abort()
                if eof or w.is_closing():
                    self.writers.remove(w)
            return bool(self.writers)

    def abort(self) -> None:
        """The step has ended here: drop what was not read."""
        for w in self.writers:
            w.transport.abort()
        self.writers.clear()


@dataclass
class Wiring:
    """How srun asks for this step's tasks to be wired: which tasks read its stdin (``all``,
    ``none`` or one task id; ``none`` for a client that does not say, as before srun sent
    input), whether task 0 runs on a pseudo-terminal of ``rows`` x ``cols``, and the program
    each task runs first (``srun --task-prolog``)."""
    takes: str | int = "none"
    pty: bool = False
    rows: int = 0
    cols: int = 0
    prolog: str = ""

    @classmethod
    def of(cls, body: dict) -> "Wiring":
        takes = body.get("input", "none")
        if not (takes in ("all", "none") or (isinstance(takes, int) and not isinstance(takes, bool))):
            raise ValueError(f"input must be all, none or a task id, not {takes!r}")
        size = body.get("winsize") or [0, 0]
        rows, cols = (int(v) for v in size) if len(size) == 2 else (0, 0)
        prolog = body.get("task_prolog") or ""
        if not isinstance(prolog, str):
            raise ValueError("task_prolog must be a file name")
        return cls(takes, bool(body.get("pty")), rows if 0 < rows < 65536 else 0, cols if 0 < cols < 65536 else 0,
                   prolog)

    def any_input(self, tasks: list[int]) -> bool:
        """Whether some of ``tasks`` (this node's) read srun's stdin."""
        return 0 in tasks if self.pty else self.takes == "all" or self.takes in tasks

    async def start(self, argv: list[str], env: dict[str, str], cwd: str, who: Identity, task: int,
                    step_input: StepInput | None, files: Stdio | None = None
                    ) -> tuple[asyncio.subprocess.Process, dict, str | None]:
        """Start one task wired as asked; its process, its output streams by kind (``o``,
        ``e``) and why its files could not be opened (None: they were).  With --pty the other
        tasks' output goes to /dev/null, as Slurm documents.  ``files`` are the task's own
        ``srun -o/-e/-i`` files ("" for a stream srun relays, /dev/null for ``none``): the
        launcher opens them as the task's user; what goes to a file is not relayed."""
        pipe, null = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
        if self.pty and task == 0:
            master, slave = open_pty(who, self.rows, self.cols)
            try:
                proc = (await spawn(argv, env, cwd, who, terminal=slave, prolog=self.prolog)).proc
            except BaseException:
                os.close(master)
                raise
            finally:
                os.close(slave)
            reader, writer = await terminal_streams(master)
            step_input.writers.append(writer)
            return proc, {"o": reader}, None
        if self.pty:
            return (await spawn(argv, env, cwd, who, prolog=self.prolog)).proc, {}, None
        reads = (self.takes == "all" or self.takes == task) and not (files and files.stdin)
        if files is None or not (files.stdin or files.stdout or files.stderr):
            proc = (await spawn(argv, env, cwd, who, stdin=pipe if reads else null, stdout=pipe, stderr=pipe,
                                prolog=self.prolog)).proc
            if reads:
                step_input.writers.append(proc.stdin)
            return proc, {"o": proc.stdout, "e": proc.stderr}, None
        started = await spawn(argv, env, cwd, who, stdio=files, stdin=pipe if reads else null,
                              stdout=null if files.stdout else pipe, stderr=null if files.stderr else pipe,
                              prolog=self.prolog)
        if started.stderr_fd is not None:
            os.close(started.stderr_fd)  # only a batch script's is kept (for slurmstepd's lines)
        proc = started.proc
        if reads:
            step_input.writers.append(proc.stdin)
        outputs = {key: stream for key, stream, named in (("o", proc.stdout, files.stdout),
                                                           ("e", proc.stderr, files.stderr)) if not named}
        return proc, outputs, started.error


class _Terminal(asyncio.StreamReaderProtocol):
    def connection_lost(self, exc: Exception | None) -> None:
        # EIO on the master: the last process holding the terminal has gone; that is its end of
        # file, after the output still buffered.
        super().connection_lost(None)


def open_pty(who: Identity, rows: int = 0, cols: int = 0) -> tuple[int, int]:
    """A new pseudo-terminal (master, slave) of the job's user, as grantpt(3) makes one: the
    slave owned by them, group tty, mode 620.  Only its descriptor is handed over: no path of
    the user's is ever opened."""
    master, slave = os.openpty()
    try:
        if rows > 0 and cols > 0:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        if who.uid is not None:
            try:
                group = grp.getgrnam("tty").gr_gid
            except KeyError:
                group = who.gid
            os.fchown(slave, who.uid, group if group is not None else -1)
            os.fchmod(slave, 0o620)
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
    return master, slave


async def terminal_streams(master: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The task's output and input at the master side of its terminal."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2 ** 20)
    await loop.connect_read_pipe(lambda: _Terminal(reader), os.fdopen(master, "rb", buffering=0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                       os.fdopen(os.dup(master), "wb", buffering=0))
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def take_input(agent: "NodeAgent", body: dict) -> dict:
    """``POST /steps/input``: a chunk of srun's stdin (base64 ``data``; ``eof`` at the end) for
    the tasks of the step its credential names, on this node only.  An expired credential still
    works (a long step keeps its input); a credential of another run or step touches nothing
    of this one.  ``open`` says whether a task here still takes input."""
    claims = agent.check_credential(body.get("credential", ""), check_expiry=False)
    data = base64.b64decode(str(body.get("data", "")), validate=True)
    run = agent.runs.get(claims["job"], claims["inc"])
    step_input = run.inputs.get(claims["step"]) if run else None
    if step_input is None:
        raise PermissionError("no such step takes input on this node")
    return {"ok": True, "open": await step_input.feed(data, bool(body.get("eof")))}
